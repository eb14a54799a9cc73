// Attacks on clients' rollups of non-matches (an event with `count`, docs/observability.md):
// what the SDK sends in a realistic run must be taken by the server, every non-match counted
// once. Through the real SDK against the real server.
import { afterEach, describe, expect, it } from 'vitest';
import { init, type GuardAgent } from '../../src/sdk/index.js';
import { addControl, startRealServer, type RunningServer } from '../sdk/real-server.js';

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
