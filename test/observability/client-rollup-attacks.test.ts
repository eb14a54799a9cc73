// Attacks on clients' rollups of non-matches (an event with `count`, docs/observability.md):
// what the SDK sends in a realistic run must be taken by the server, every non-match counted
// once. Through the real SDK against the real server.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ControlDataSchema } from '../../src/model/index.js';
import { init, type GuardAgent } from '../../src/sdk/index.js';
import { addControl, startRealServer, type RunningServer } from '../sdk/real-server.js';
import { storeKinds } from '../server/both-stores.js';
import { makeEvent } from './fixtures.js';

let server: RunningServer | undefined;
let guard: GuardAgent | undefined;
afterEach(async () => {
  await guard?.shutdown();
  await server?.close();
  guard = server = undefined;
});

describe('an SDK rolling up non-matches, attacked', () => {
  it('a batch job checking two million rows in-process without yielding: every non-match reaches the stats, none is refused', async () => {
    server = await startRealServer();
    await server.client.initAgent({ agent_name: 'etl' });
    await addControl(server.client, 'etl', 'no-ssn', {
      execution: 'sdk',
      scope: { step_types: ['tool'], step_names: ['load_row'], stages: ['pre'] },
      selector: { path: 'input.text' },
      evaluator: { name: 'regex', config: { pattern: '\\b\\d{3}-\\d{2}-\\d{4}\\b' } },
      action: { decision: 'deny' },
    });
    const warnings: string[] = [];
    guard = await init({ agentName: 'etl', serverUrl: server.url, refreshIntervalSeconds: 0, logger: { info: () => undefined, warn: (m: string) => warnings.push(m) } });
    // Rows held in memory, each checked before it is loaded: the loop never yields to a
    // timer, so the flush interval does not run. Two million: at most one minute boundary
    // falls within the loop, so one minute holds more than a million of them.
    const rows = 2_000_002;
    const step = { type: 'tool' as const, name: 'load_row', input: { text: 'a row without a social security number' } };
    for (let i = 0; i < rows; i++) await guard.check(step, 'pre');
    await guard.flushEvents();
    expect(warnings).toEqual([]);
    expect(guard.pendingEvents).toBe(0);
    await expect.poll(async () => (await server!.client.stats({ agent_name: 'etl', time_range: '1h' })).totals, { timeout: 30_000 }).toMatchObject({
      executions: rows,
      non_matches: rows,
    });
  }, 180_000);
});

for (const kind of storeKinds()) {
  describe.skipIf(kind.skip !== null)(kind.skip ?? `a client's rollups beside other agents' (${kind.kind})`, () => {
    afterAll(() => kind.cleanup());

    it('a rollup claiming an absurd total duration, sent in two flushes, costs no other agent its non-matches and leaves the stats readable', async () => {
      const s = await kind.open();
      try {
        const sdkControl = async (agent: string, name: string) => {
          const data = ControlDataSchema.parse({ execution: 'sdk', scope: { step_types: ['tool'] }, selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern: 'x' } }, action: { decision: 'deny' } });
          const control = await s.store.createControl({ name, data });
          await s.store.upsertAgent({ agent_name: agent });
          await s.store.linkControl(agent, control.control_id);
          return control.control_id;
        };
        const mine = await sdkControl('mallory-bot', 'mallory-check');
        const theirs = await sdkControl('support-bot', 'support-check');
        const ingest = (events: unknown[]) =>
          s.app.inject({ method: 'POST', url: '/api/v1/observability/events', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ events }) });
        const absurd = (i: number) => makeEvent(i, { agent_name: 'mallory-bot', control_id: mine, control_name: 'mallory-check', matched: false, count: 5, execution_duration_ms: 1e308 });
        await ingest([absurd(1)]);
        await s.observability.flush();
        // The next flush adds to the same minute's rollup: 1e308 + 1e308 is past a double.
        await ingest([absurd(3)]);
        expect((await ingest([makeEvent(5, { agent_name: 'support-bot', control_id: theirs, control_name: 'support-check', matched: false, count: 3, execution_duration_ms: 1.5 })])).statusCode).toBe(202);
        await s.observability.flush();
        const stats = await s.app.inject({ method: 'GET', url: '/api/v1/observability/stats?time_range=1h' });
        expect(stats.statusCode).toBe(200);
        const controls = stats.json().controls as { control_id: number; non_matches: number; avg_duration_ms: number | null }[];
        expect(controls.find((c) => c.control_id === theirs)).toMatchObject({ non_matches: 3, avg_duration_ms: 0.5 });
        for (const c of controls) expect(c.avg_duration_ms === null || Number.isFinite(c.avg_duration_ms)).toBe(true);
      } finally {
        await s.close();
      }
    });
  });
}
