// The SDK rolls up the non-matches of its in-process checks before sending them: one event
// per minute, agent, stage, step, session and control with `count`; matches, errors and
// selector_missing non-matches go one event each. Unit cases on the tally, then an agent
// against the real server, whose stats must count every non-match.
import { afterEach, describe, expect, it } from 'vitest';
import type { ControlExecution } from '../../src/engine/api.js';
import { ObservabilityEventSchema } from '../../src/model/index.js';
import { init, type GuardAgent } from '../../src/sdk/index.js';
import { MAX_TALLY_KEYS, NonMatchTally, type TalliedCheck } from '../../src/sdk/non-match-tally.js';
import { addControl, startRealServer, type RunningServer } from './real-server.js';

const T = Date.parse('2026-12-07T10:00:10.000Z');

function execution(control_id: number, over: Partial<ControlExecution> = {}): ControlExecution {
  return { control_id, control_name: `c${control_id}`, action: 'deny', matched: false, confidence: 1, error_message: null, evaluator_name: 'regex', selector_path: 'input.q', duration_ms: 0.25, mode: 'enforce', ...over };
}

function context(over: Partial<TalliedCheck> = {}): TalliedCheck {
  return { agentName: 'bot', stepType: 'tool', stepName: 'run_sql', stage: 'pre', setRevision: 7, sessionId: 'run-1', ...over };
}

const parsed = (texts: string[]) => texts.map((t) => ObservabilityEventSchema.parse(JSON.parse(t)));

describe('NonMatchTally', () => {
  it('rolls up plain non-matches per control; matches, errors and missing selectors are sent one each', () => {
    const tally = new NonMatchTally();
    const single = [execution(2, { matched: true }), execution(3, { error_message: 'timeout', matched: true }), execution(4, { selector_missing: true })];
    for (let i = 0; i < 5; i++) {
      expect(tally.add([execution(1), ...single], context(), T + i)).toEqual(single);
    }
    const events = parsed(tally.drain());
    expect(events).toEqual([
      expect.objectContaining({ control_id: 1, control_name: 'c1', matched: false, count: 5, execution_duration_ms: 1.25, timestamp: new Date(T + 4).toISOString(), session_id: 'run-1', set_revision: 7, metadata: { source: 'sdk', step_name: 'run_sql' } }),
    ]);
    expect(tally.size).toBe(0);
    expect(tally.drain()).toEqual([]);
  });

  it('keeps apart what an event tells apart: minute, step, session, stage, agent, set revision and the control as it ran', () => {
    const tally = new NonMatchTally();
    const contexts: [TalliedCheck, number][] = [
      [context(), T],
      [context(), T + 60_000],
      [context({ stepName: 'send_email' }), T],
      [context({ stepType: 'llm' }), T],
      [context({ sessionId: 'run-2' }), T],
      [context({ sessionId: null }), T],
      [context({ stage: 'post' }), T],
      [context({ agentName: 'other' }), T],
      [context({ setRevision: 8 }), T],
    ];
    for (const [ctx, at] of contexts) tally.add([execution(1)], ctx, at);
    tally.add([execution(1, { mode: 'shadow' }), execution(1, { control_name: 'renamed' }), execution(1, { action: 'warn' })], context(), T);
    const events = parsed(tally.drain());
    expect(events).toHaveLength(contexts.length + 3);
    expect(events.every((e) => e.count === undefined)).toBe(true);
  });

  it('past MAX_TALLY_KEYS keys a new key is sent as an event of its own, never dropped; known keys still add up', () => {
    const tally = new NonMatchTally();
    for (let id = 0; id < MAX_TALLY_KEYS; id++) expect(tally.add([execution(id)], context(), T)).toEqual([]);
    const extra = execution(MAX_TALLY_KEYS);
    expect(tally.add([execution(0), extra], context(), T)).toEqual([extra]);
    const events = parsed(tally.drain());
    expect(events).toHaveLength(MAX_TALLY_KEYS);
    expect(events.find((e) => e.control_id === 0)!.count).toBe(2);
  });
});

describe('an agent sends its non-matches rolled up, and the server counts each', () => {
  let server: RunningServer | undefined;
  let agent: GuardAgent | undefined;
  afterEach(async () => {
    await agent?.shutdown();
    await server?.close();
    agent = server = undefined;
  });

  it('200 checks of 11 controls, one match among them: 12 events reach the server, the stats count 2,199 non-matches', async () => {
    server = await startRealServer();
    await server.client.initAgent({ agent_name: 'tally-bot' });
    const ids: number[] = [];
    for (let i = 0; i < 10; i++) {
      ids.push(await addControl(server.client, 'tally-bot', `never-${i}`, {
        execution: 'sdk',
        scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
        selector: { path: 'input.query' },
        evaluator: { name: 'regex', config: { pattern: `never-matches-${i}` } },
        action: { decision: 'deny' },
      }));
    }
    await addControl(server.client, 'tally-bot', 'warn-select', {
      execution: 'sdk',
      scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '^select 0$' } },
      action: { decision: 'warn' },
    });
    const received: number[] = [];
    const warnings: string[] = [];
    const fetchCounting: typeof fetch = async (input, init) => {
      const url = input instanceof Request ? input.url : input.toString();
      if (url.endsWith('/observability/events')) received.push((JSON.parse(init!.body as string) as { events: unknown[] }).events.length);
      return fetch(input, init);
    };
    agent = await init({ agentName: 'tally-bot', serverUrl: server.url, refreshIntervalSeconds: 0, eventFlushIntervalSeconds: 60, logger: { info: () => undefined, warn: (m: string) => warnings.push(m) }, fetch: fetchCounting });
    for (let i = 0; i < 200; i++) await agent.check({ type: 'tool', name: 'run_sql', input: { query: `select ${i}` } }, 'pre');
    await agent.flushEvents();
    // The match, and one rollup per control (the warn control's 199 non-matches too).
    expect(received.reduce((a, b) => a + b, 0)).toBe(12);
    expect(warnings.filter((w) => !w.includes("warn-select"))).toEqual([]);
    await expect.poll(async () => (await server!.client.stats({ agent_name: 'tally-bot', time_range: '1h' })).totals, { timeout: 30_000 }).toMatchObject({
      executions: 2_200, non_matches: 2_199, matches: 1,
    });
  });
});
