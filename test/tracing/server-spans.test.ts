/**
 * The server's `guardctl.evaluate` spans, end to end: the real server on a real SQLite file
 * and a real socket, exporting over OTLP/HTTP to a real receiver on a free port.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GuardClient } from '../../src/client/index.js';
import type { EvaluatorDefinition } from '../../src/evaluators/types.js';
import type { AssembledServer } from '../../src/server/assemble.js';
import { startTestServer } from '../support/server.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.js';

const boom: EvaluatorDefinition = {
  name: 'boom',
  description: 'always fails',
  configSchema: { type: 'object' },
  compile: () => () => {
    throw new Error('the scoring service is down');
  },
};

interface Running {
  server: AssembledServer;
  url: string;
  client: GuardClient;
  root: string;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function receiver(): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  cleanups.push(() => r.close());
  return r;
}

async function startServer(env: Record<string, string>): Promise<Running> {
  const root = mkdtempSync(join(tmpdir(), 'guardctl-otel-'));
  const server = await startTestServer({
    env: { OTEL_TRACES_SAMPLER: 'always_on', ...env },
    config: { databaseUrl: join(root, 'guard.db') },
    evaluators: [boom],
    observability: {},
    listen: true,
  });
  const url = server.url;
  cleanups.push(async () => {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });
  return { server, url, client: new GuardClient({ serverUrl: url }), root };
}

async function seed(client: GuardClient): Promise<void> {
  await client.initAgent({ agent_name: 'support-bot' });
  const add = async (name: string, data: Parameters<GuardClient['createControl']>[0]['data']) => {
    const { control_id } = await client.createControl({ name, data });
    await client.link('support-bot', control_id);
  };
  await add('block-drop', {
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
    action: { decision: 'deny' },
  });
  await add('steer-card', {
    scope: { step_types: ['llm'], stages: ['pre'] },
    selector: { path: 'input' },
    evaluator: { name: 'regex', config: { pattern: '\\b4\\d{15}\\b' } },
    action: { decision: 'steer', steering_context: { message: 'remove the card number' } },
  });
  await add('score-it', {
    scope: { step_types: ['tool'], step_names: ['explode'], stages: ['pre'] },
    selector: { path: 'input' },
    evaluator: { name: 'boom', config: { on_error: 'allow' } },
    action: { decision: 'deny' },
  });
}

async function evaluate(url: string, body: object, headers: Record<string, string> = {}): Promise<{ status: number; decision?: string }> {
  const res = await fetch(`${url}/api/v1/evaluation`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, ...((await res.json()) as { decision?: string }) };
}

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const parent = (span: string) => ({ traceparent: `00-${TRACE}-${span}-01`, tracestate: 'vendor=abc' });
const byParent = (spans: ReceivedSpan[], id: string) => spans.find((s) => s.parentSpanId === id);

describe('guardctl.evaluate spans', () => {
  it('are children of the request\'s traceparent, with the decision, the matched controls and an event per match', async () => {
    const otlp = await receiver();
    const { server, url, client } = await startServer({
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_SERVICE_NAME: 'guard-test',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=abc%20def',
    });
    await seed(client);
    const revision = (await client.getAgentControls('support-bot')).set_revision;

    expect(await evaluate(url, { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'select 1' } } }, parent('00f067aa0ba90001'))).toMatchObject({ status: 200, decision: 'allow' });
    expect(await evaluate(url, { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } } }, parent('00f067aa0ba90002'))).toMatchObject({ status: 200, decision: 'deny' });
    expect(await evaluate(url, { agent_name: 'support-bot', stage: 'pre', step: { type: 'llm', name: 'chat', input: 'my card is 4111111111111111' } }, parent('00f067aa0ba90003'))).toMatchObject({ status: 200, decision: 'steer' });
    expect(await evaluate(url, { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'explode', input: 'anything' } }, parent('00f067aa0ba90004'))).toMatchObject({ status: 200, decision: 'allow' });
    await server.tracing!.forceFlush();
    const spans = await otlp.waitFor((s) => s.length >= 4);
    expect(otlp.errors).toEqual([]);
    // OTLP/HTTP with protobuf bodies unless asked otherwise, as OpenTelemetry's exporters default.
    expect(new Set(otlp.encodings)).toEqual(new Set(['protobuf']));
    expect(spans.every((s) => s.name === 'guardctl.evaluate' && s.traceId === TRACE && s.kind === 2)).toBe(true);
    expect(spans[0]!.resource['service.name']).toBe('guard-test');
    expect(otlp.headers[0]!['x-collector-token']).toBe('abc def');

    const allow = byParent(spans, '00f067aa0ba90001')!;
    expect(allow.attributes).toEqual({
      'guardctl.agent': 'support-bot',
      'guardctl.stage': 'pre',
      'guardctl.step.type': 'tool',
      'guardctl.step.name': 'run_sql',
      'guardctl.decision': 'allow',
      'guardctl.controls.matched': [],
      'guardctl.controls.evaluated': 1,
      'guardctl.set_revision': revision,
    });
    expect(allow.events).toEqual([]);
    expect(allow.status.code).toBe(0);

    const deny = byParent(spans, '00f067aa0ba90002')!;
    expect(deny.attributes).toMatchObject({ 'guardctl.decision': 'deny', 'guardctl.controls.matched': ['block-drop'], 'guardctl.controls.evaluated': 1 });
    // A deny is the guard working, not an error.
    expect(deny.status.code).toBe(0);
    expect(deny.events).toHaveLength(1);
    expect(deny.events[0]).toMatchObject({
      name: 'guardctl.control.matched',
      attributes: { 'guardctl.control.name': 'block-drop', 'guardctl.control.action': 'deny', 'guardctl.control.evaluator': 'regex', 'guardctl.control.matched': true },
    });
    expect(deny.events[0]!.attributes['guardctl.control.duration_ms']).toEqual(expect.any(Number));
    // Nothing of the step's content by default.
    expect(JSON.stringify(deny)).not.toMatch(/DROP TABLE/i);

    const steer = byParent(spans, '00f067aa0ba90003')!;
    expect(steer.attributes).toMatchObject({ 'guardctl.decision': 'steer', 'guardctl.step.type': 'llm', 'guardctl.controls.matched': ['steer-card'] });
    expect(steer.events.map((e) => e.attributes['guardctl.control.action'])).toEqual(['steer']);
    expect(JSON.stringify(steer)).not.toContain('4111');

    const failed = byParent(spans, '00f067aa0ba90004')!;
    expect(failed.status).toMatchObject({ code: 2, message: 'evaluator error in control "score-it"' });
    expect(failed.events).toEqual([
      expect.objectContaining({ name: 'guardctl.control.error', attributes: expect.objectContaining({ 'guardctl.control.name': 'score-it', 'guardctl.control.evaluator': 'boom' }) }),
    ]);
    // The error text could quote the step: only with GUARD_OTEL_INCLUDE_CONTENT.
    expect(JSON.stringify(failed)).not.toContain('scoring service');
  });

  it('start a new trace for an invalid traceparent, and mark refused requests without an error status', async () => {
    const otlp = await receiver();
    const { server, url, client } = await startServer({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.url}/v1/traces` });
    await seed(client);
    const step = { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'select 1' } } };
    for (const bad of ['garbage', `00-${'0'.repeat(32)}-00f067aa0ba90001-01`, `ff-${TRACE}-00f067aa0ba90001-01`, `00-${TRACE}-00f067aa0ba90001-01-extra`]) {
      expect((await evaluate(url, step, { traceparent: bad })).status).toBe(200);
    }
    expect((await evaluate(url, { ...step, stage: 'later' }, parent('00f067aa0ba90009'))).status).toBe(422);
    await server.tracing!.forceFlush();
    const spans = await otlp.waitFor((s) => s.length >= 5);
    const fresh = spans.filter((s) => s.parentSpanId === '');
    expect(fresh).toHaveLength(4);
    expect(fresh.every((s) => s.traceId !== TRACE && /^[\da-f]{32}$/.test(s.traceId))).toBe(true);
    const refused = byParent(spans, '00f067aa0ba90009')!;
    expect(refused.attributes['http.response.status_code']).toBe(422);
    expect(refused.status.code).toBe(0);
  });

  it('carry masked messages and excerpts only with GUARD_OTEL_INCLUDE_CONTENT=true', async () => {
    const otlp = await receiver();
    const { server, url, client } = await startServer({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, GUARD_OTEL_INCLUDE_CONTENT: 'true' });
    await seed(client);
    await evaluate(url, { agent_name: 'support-bot', stage: 'pre', step: { type: 'llm', name: 'chat', input: 'my card is 4111111111111111' } });
    await evaluate(url, { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'explode', input: 'anything' } });
    await server.tracing!.forceFlush();
    const spans = await otlp.waitFor((s) => s.length >= 2);
    const steer = spans.find((s) => s.attributes['guardctl.decision'] === 'steer')!;
    expect(steer.events[0]!.attributes['guardctl.control.excerpt']).toBe('my card is 4111…1111');
    expect(steer.events[0]!.attributes['guardctl.control.message']).toContain('4111…1111');
    expect(JSON.stringify(steer)).not.toContain('4111111111111111');
    const failed = spans.find((s) => s.status.code === 2)!;
    expect(failed.events[0]!.attributes['guardctl.control.error']).toContain('the scoring service is down');
  });

  it('follow the sampler: always_off exports nothing, parentbased follows the caller\'s flag', async () => {
    const otlp = await receiver();
    const { server, url, client } = await startServer({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: 'parentbased_always_off' });
    await seed(client);
    const step = { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'select 1' } } };
    await evaluate(url, step);
    await evaluate(url, step, { traceparent: `00-${TRACE}-00f067aa0ba90005-00` });
    await evaluate(url, step, { traceparent: `00-${TRACE}-00f067aa0ba90006-01` });
    await server.tracing!.forceFlush();
    const spans = await otlp.waitFor((s) => s.length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(spans.map((s) => s.parentSpanId)).toEqual(['00f067aa0ba90006']);
  });
});

describe('ratio sampling', () => {
  it('keeps about the ratio of new traces, and never a step whose caller did not sample it under parentbased_traceidratio', async () => {
    const otlp = await receiver();
    const { server, client } = await startServer({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' });
    await seed(client);
    const payload = { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'select 1' } } };
    const post = (headers: Record<string, string> = {}) => server.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload, headers });
    for (let i = 0; i < 400; i++) expect((await post()).statusCode).toBe(200);
    for (let i = 0; i < 50; i++) await post({ traceparent: `00-${TRACE}-00f067aa0ba9000a-00` });
    for (let i = 0; i < 20; i++) await post({ traceparent: `00-${TRACE}-00f067aa0ba9000b-01` });
    await server.tracing!.forceFlush();
    const spans = await otlp.waitFor((s) => s.filter((span) => span.parentSpanId === '00f067aa0ba9000b').length === 20);
    const roots = spans.filter((span) => span.parentSpanId === '').length;
    // 100 expected; the bounds are almost six standard deviations away.
    expect(roots).toBeGreaterThan(50);
    expect(roots).toBeLessThan(150);
    expect(spans.some((span) => span.parentSpanId === '00f067aa0ba9000a')).toBe(false);
  });
});

describe('a collector that is down or slow', () => {
  it('never fails an evaluation; the spans it did not take are counted in /metrics', async () => {
    // A port that was just free and is closed again: connections are refused.
    const gone = await startOtlpReceiver();
    await gone.close();
    const { server, url, client } = await startServer({ OTEL_EXPORTER_OTLP_ENDPOINT: gone.url, OTEL_EXPORTER_OTLP_TIMEOUT: '2000' });
    await seed(client);
    for (let i = 0; i < 20; i++) {
      expect(await evaluate(url, { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'drop table t' } } })).toMatchObject({ status: 200, decision: 'deny' });
    }
    await server.tracing!.forceFlush().catch(() => undefined);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const dropped = Number(/guard_otel_spans_dropped_total\{reason="export_failed"\} (\d+)/.exec(metrics)?.[1]);
    expect(dropped).toBeGreaterThanOrEqual(20);
    expect(metrics).toContain('guard_otel_spans_dropped_total{reason="queue_full"} 0');
  });

  it('holds at most the bounded queue while the collector hangs, dropping and counting the rest', async () => {
    const slow = await receiver();
    slow.delayMs = 60_000;
    const { server, client } = await startServer({ OTEL_EXPORTER_OTLP_ENDPOINT: slow.url, OTEL_EXPORTER_OTLP_TIMEOUT: '30000' });
    await seed(client);
    const payload = { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'select 1' } } };
    // Through the real route (inject skips only the socket) so that 4000 steps are quick.
    for (let round = 0; round < 40; round++) {
      const answers = await Promise.all(Array.from({ length: 100 }, () => server.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload })));
      expect(answers.every((a) => a.statusCode === 200)).toBe(true);
    }
    const dropped = server.tracing!.dropped();
    // One batch (512) hangs in the exporter, 2048 wait; the rest of the 4000 are dropped.
    expect(dropped.queue_full).toBeGreaterThanOrEqual(4000 - 2048 - 512);
    const metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toContain(`guard_otel_spans_dropped_total{reason="queue_full"} ${dropped.queue_full}`);
  });
});

describe('the OTLP encoding', () => {
  it('is JSON with OTEL_EXPORTER_OTLP_PROTOCOL=http/json, carrying the same span', async () => {
    const otlp = await receiver();
    const { server, url, client } = await startServer({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    await seed(client);
    const step = { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } };
    expect(await evaluate(url, { agent_name: 'support-bot', stage: 'pre', step }, parent('00f067aa0ba900aa'))).toMatchObject({ decision: 'deny' });
    await server.tracing!.forceFlush();
    const [span] = await otlp.waitFor((s) => s.length >= 1);
    expect(otlp.errors).toEqual([]);
    expect(new Set(otlp.encodings)).toEqual(new Set(['json']));
    expect(span).toMatchObject({ name: 'guardctl.evaluate', traceId: TRACE, parentSpanId: '00f067aa0ba900aa', kind: 2 });
    expect(span!.attributes).toMatchObject({ 'guardctl.decision': 'deny', 'guardctl.controls.matched': ['block-drop'] });
    expect(span!.events.map((e) => e.attributes['guardctl.control.name'])).toEqual(['block-drop']);
  });
});
