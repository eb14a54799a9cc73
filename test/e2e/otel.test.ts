// The built binary with OpenTelemetry: `guardctl serve` exporting its spans, `guardctl apply`
// in a pipeline (TRACEPARENT) exporting its own before it exits, and bad OTEL_* values.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startOtlpReceiver, type OtlpReceiver } from '../tracing/otlp-receiver.js';
import { runCli } from './run-cli.js';
import { requireBuiltBinary, startServeProcess, type ServeProcess } from './serve-process.js';

const repo = join(import.meta.dirname, '../..');
const PIPELINE_TRACE = '5c1f0e9a3b7d4e2f8a6b9c0d1e2f3a4b';
const PIPELINE_SPAN = '1a2b3c4d5e6f7081';

let work: string;
let otlp: OtlpReceiver;
let server: ServeProcess;

beforeAll(async () => {
  requireBuiltBinary();
  work = mkdtempSync(join(tmpdir(), 'guardctl-e2e-otel-'));
  cpSync(join(repo, 'test/fixtures/example-controls'), join(work, 'controls'), { recursive: true });
  otlp = await startOtlpReceiver();
  server = await startServeProcess({
    args: ['--db', join(work, 'guard.db')],
    cwd: work,
    env: { OBSERVABILITY_ENABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'guard-e2e' },
  });
});

afterAll(async () => {
  await server?.stop();
  await otlp?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

it('guardctl apply in a pipeline is a guardctl.apply span under TRACEPARENT, exported before it exits', { timeout: 120_000 }, async () => {
  const applied = await runCli(['apply', 'controls', '--auto-approve'], {
    cwd: work,
    env: {
      GUARD_URL: server.url,
      CI: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_SERVICE_NAME: 'pipeline',
      TRACEPARENT: `00-${PIPELINE_TRACE}-${PIPELINE_SPAN}-01`,
      TRACESTATE: 'ci=github',
    },
  });
  expect(applied.code, applied.stderr).toBe(0);
  // No waiting: the command exported its span before exiting.
  const apply = otlp.spans.find((s) => s.name === 'guardctl.apply');
  expect(apply).toMatchObject({ traceId: PIPELINE_TRACE, parentSpanId: PIPELINE_SPAN, traceState: 'ci=github', status: { code: 0 } });
  expect(apply!.resource['service.name']).toBe('pipeline');
  const a = apply!.attributes;
  expect(a).toMatchObject({ 'guardctl.apply.target': 'controls', 'guardctl.apply.server': server.url, 'guardctl.apply.result': 'success', 'guardctl.apply.failed': 0, 'guardctl.apply.not_done': 0 });
  expect(a['guardctl.apply.operations']).toBeGreaterThan(0);
  expect(a['guardctl.apply.done']).toBe(a['guardctl.apply.operations']);
  expect(a['guardctl.apply.planned.create_control']).toBeGreaterThan(0);

  // The served binary traces evaluations too.
  const res = await fetch(`${server.url}/api/v1/evaluation`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', traceparent: `00-${PIPELINE_TRACE}-00000000000000aa-01` },
    body: JSON.stringify({ agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } } }),
  });
  expect(res.status).toBe(200);
  const spans = await otlp.waitFor((s) => s.some((span) => span.name === 'guardctl.evaluate'));
  const evaluate = spans.find((span) => span.name === 'guardctl.evaluate')!;
  expect(evaluate).toMatchObject({ parentSpanId: '00000000000000aa', resource: { 'service.name': 'guard-e2e' } });
  expect(evaluate.attributes['guardctl.agent']).toBe('support-bot');
});

it('a bad OTEL_* value stops serve and apply with one line', { timeout: 60_000 }, async () => {
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '5' };
  const line = 'error: OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got "5": for example OTEL_TRACES_SAMPLER_ARG=0.01 keeps one trace in a hundred\n';
  const serve = await runCli(['serve', '--port', '0', '--db', join(work, 'other.db')], { cwd: work, env });
  expect(serve).toMatchObject({ code: 1, stderr: line });
  const apply = await runCli(['apply', 'controls', '--auto-approve'], { cwd: work, env: { ...env, GUARD_URL: server.url } });
  expect(apply).toMatchObject({ code: 1, stderr: line });
});
