/**
 * Text a store cannot keep (NUL, lone surrogates) and agent names at the length limit,
 * on both stores: the API refuses such text with a 422 naming the field, derived records
 * (events, recorded steps) keep it with U+FFFD in place of those characters, and a name
 * the model accepts works on every /agents/{name} route. The answers are the same on
 * SQLite and PostgreSQL.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ObservabilityEvent } from '../../src/model/index.js';
import { StepRecorder } from '../../src/recording/recorder.js';
import { storeKinds, type StoreApp } from './both-stores.js';
import { sqlControl } from './helpers.js';

const NUL = 'a\u0000b';
const LONE = 'a\ud800b';

function event(i: number, overrides: Partial<ObservabilityEvent> = {}): ObservabilityEvent {
  return {
    control_execution_id: `ce-${i}`,
    trace_id: 't'.repeat(32),
    span_id: 's'.repeat(16),
    agent_name: 'bot',
    control_id: 1,
    control_name: 'no-drop',
    check_stage: 'pre',
    applies_to: 'tool',
    action: 'deny',
    matched: true,
    confidence: 1,
    timestamp: new Date().toISOString(),
    execution_duration_ms: 1,
    evaluator_name: 'regex',
    selector_path: 'input.query',
    error_message: null,
    metadata: null,
    ...overrides,
  };
}

for (const target of storeKinds()) {
  describe.skipIf(target.skip !== null)(target.skip ?? `text and names on ${target.kind}`, () => {
    let server: StoreApp | undefined;
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });
    afterAll(() => target.cleanup());

    async function send(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
      const res = await server!.app.inject({ method, url, ...(payload === undefined ? (method === 'GET' ? {} : { headers: { 'content-type': 'application/json' } }) : { payload: payload as never }) });
      return { status: res.statusCode, type: String(res.headers['content-type']), body: res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {} };
    }

    async function expectRefused(method: 'GET' | 'POST' | 'PUT' | 'PATCH', url: string, payload: unknown, field: string) {
      const res = await send(method, url, payload);
      expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).toBe(422);
      expect(res.type).toContain('application/problem+json');
      expect(res.body).toMatchObject({ status: 422, error_code: 'validation_failed' });
      expect((res.body.errors as Array<{ field: string }>).map((e) => e.field)).toContain(field);
    }

    it('refuses NUL and lone surrogates with 422 naming the field, and stores nothing', async () => {
      server = await target.open();
      await send('POST', '/api/v1/agents/initAgent', { agent_name: 'bot' });
      const before = [await send('GET', '/api/v1/agents'), await send('GET', '/api/v1/controls')];

      for (const bad of [NUL, LONE]) {
        await expectRefused('PUT', '/api/v1/controls', { name: 'c', data: sqlControl({ description: bad }) }, 'data.description');
        await expectRefused('POST', '/api/v1/agents/initAgent', { agent_name: 'other', agent_description: bad }, 'agent_description');
        await expectRefused('PATCH', '/api/v1/agents/bot', { agent_description: bad }, 'agent_description');
        await expectRefused('POST', '/api/v1/agents/initAgent', { agent_name: 'other', metadata: { [bad]: 1 } }, 'metadata');
        await expectRefused(
          'POST',
          '/api/v1/changes',
          { changes: [{ op: 'create_control', control: { name: 'c', data: sqlControl({ description: bad }) } }] },
          'changes[0].control.data.description',
        );
        await expectRefused('POST', '/api/v1/observability/events/query', { agent_name: bad }, 'agent_name');
      }
      await expectRefused('GET', '/api/v1/agents/a%00b', undefined, 'agent_name');
      await expectRefused('GET', '/api/v1/agents/a%00b/controls', undefined, 'agent_name');
      await expectRefused('GET', '/api/v1/observability/stats?agent_name=a%00b', undefined, 'agent_name');
      await expectRefused('GET', '/api/v1/controls?name=a%00b', undefined, 'name');

      expect([await send('GET', '/api/v1/agents'), await send('GET', '/api/v1/controls')]).toEqual(before);
    });

    it('stores events holding such text with U+FFFD in its place, beside the valid ones', async () => {
      server = await target.open();
      const events = Array.from({ length: 100 }, (_, i) => event(i));
      events.push(event(100, { control_name: NUL, error_message: LONE, metadata: { [NUL]: LONE, step_name: NUL } }));
      const ingest = await send('POST', '/api/v1/observability/events', { events });
      expect(ingest.status).toBe(202);
      expect(ingest.body).toMatchObject({ received: 101, enqueued: 101, dropped: 0 });
      await server.observability.flush();
      const stored = await server.store.queryEvents({ limit: 1000, offset: 0 });
      expect(stored.total).toBe(101);
      const odd = stored.events.find((e) => e.control_execution_id === 'ce-100');
      expect(odd).toMatchObject({
        control_name: 'a\uFFFDb',
        error_message: 'a\uFFFDb',
        metadata: { 'a\uFFFDb': 'a\uFFFDb', step_name: 'a\uFFFDb' },
      });
    });

    it('records steps holding such text with U+FFFD in its place', async () => {
      server = await target.open();
      const recorder = new StepRecorder(server.store, { sampleRate: 1, maxStepBytes: 65_536, retentionDays: 1, redact: [], flushIntervalMs: 60_000 });
      recorder.record({ agent_name: 'bot', stage: 'pre', decision: 'allow', step: { type: 'tool', name: 'run_sql', input: { [NUL]: LONE, plain: '\\u0000' } } });
      await recorder.flush();
      expect(recorder.stats).toMatchObject({ written: 1, failed_writes: 0 });
      const page = await server.store.queryRecordedSteps({ limit: 10 });
      expect(page.steps[0]?.step).toEqual({ type: 'tool', name: 'run_sql', input: { 'a\uFFFDb': 'a\uFFFDb', plain: '\\u0000' } });
    });

    it('serves every /agents/{name} route for names up to the limit, and names the field above it', async () => {
      server = await target.open();
      const name = 'a'.repeat(128);
      expect((await send('POST', '/api/v1/agents/initAgent', { agent_name: name })).status).toBe(201);
      const control = await send('PUT', '/api/v1/controls', { name: 'c', data: sqlControl() });
      expect((await send('POST', `/api/v1/agents/${name}/controls/${control.body.control_id as number}`)).status).toBe(200);
      expect((await send('GET', `/api/v1/agents/${name}`)).body).toMatchObject({ agent_name: name, controls: [{ name: 'c' }] });
      expect((await send('GET', `/api/v1/agents/${name}/controls`)).status).toBe(200);
      expect((await send('PATCH', `/api/v1/agents/${name}`, { agent_version: '2' })).status).toBe(200);
      expect((await send('DELETE', `/api/v1/agents/${name}/controls/${control.body.control_id as number}`)).status).toBe(200);
      // Encoded characters count once: an upper-case name spelled with escapes still routes.
      expect((await send('GET', `/api/v1/agents/${'%41'.repeat(128)}`)).body).toMatchObject({ agent_name: name });

      const long = 'a'.repeat(129);
      await expectRefused('POST', '/api/v1/agents/initAgent', { agent_name: long }, 'agent_name');
      await expectRefused('GET', `/api/v1/agents/${long}`, undefined, 'agent_name');
      await expectRefused('PATCH', `/api/v1/agents/${long}`, { agent_version: '2' }, 'agent_name');
    });
  });
}
