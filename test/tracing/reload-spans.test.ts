/** `guardctl.reload` spans of watch mode: a real watched directory, a real SQLite file, a real receiver. */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { assembleServer, type AssembledServer } from '../../src/server/assemble.js';
import { loadConfig } from '../../src/server/config.js';
import { agentDoc, sqlControl, tempControlsDir, writeIn } from '../reload/helpers.js';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.js';

let server: AssembledServer | undefined;
let otlp: OtlpReceiver | undefined;
let root: string | undefined;
afterEach(async () => {
  await server?.close();
  await otlp?.close();
  if (root) rmSync(root, { recursive: true, force: true });
  server = otlp = root = undefined;
});

it('each reload is a guardctl.reload span with its revision and result; a failed one has the error status', async () => {
  otlp = await startOtlpReceiver();
  const made = tempControlsDir({ 'sql.yaml': sqlControl('block-drop', '(?i)drop'), 'agents.yaml': agentDoc('sql-bot', ['block-drop']) });
  root = made.root;
  const config = loadConfig(
    { OBSERVABILITY_ENABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url },
    { watchDir: made.dir, databaseUrl: join(made.root, 'guard.db') },
  );
  server = await assembleServer(config, { registry: createDefaultRegistry(), observability: { processMetrics: false }, watch: { debounceMs: 30 } });
  const first = server.hotReload!.initial;
  await server.tracing!.forceFlush();
  const [start] = await otlp.waitFor((s) => s.some((span) => span.attributes['guardctl.reload.result'] === 'success'));
  expect(start).toMatchObject({ name: 'guardctl.reload', parentSpanId: '', status: { code: 0 } });
  expect(start!.attributes).toMatchObject({
    'guardctl.reload.result': 'success',
    'guardctl.reload.revision': first.revision,
    'guardctl.reload.operations': first.operations,
    'guardctl.reload.agents': 1,
    'guardctl.reload.errors': 0,
    'guardctl.set_revision': await server.store.revision(),
  });
  expect(first.operations).toBeGreaterThan(0);

  writeIn(made.dir, 'sql.yaml', 'kind: Control\nname: block-drop\nscope: [unclosed\n');
  await otlp.waitFor((s) => s.some((span) => span.attributes['guardctl.reload.result'] === 'failure'), 15_000).catch(async () => {
    await server!.tracing!.forceFlush();
    return otlp!.waitFor((s) => s.some((span) => span.attributes['guardctl.reload.result'] === 'failure'));
  });
  const failed = otlp.spans.find((span) => span.attributes['guardctl.reload.result'] === 'failure')!;
  expect(failed.status.code).toBe(2);
  const errors = server.hotReload!.reloader.status().errors.length;
  expect(errors).toBeGreaterThan(0);
  expect(failed.status.message).toBe(`the directory is not valid (${errors} error${errors === 1 ? '' : 's'}); the last good controls stay`);
  expect(failed.attributes['guardctl.reload.errors']).toBe(errors);
  expect(failed.attributes).not.toHaveProperty('guardctl.set_revision');
});
