// plan --replay with controls that count (issue #37, ninth pass): rate and repeat count
// the replayed steps, at the time each was recorded, instead of failing on every step.
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import type { ControlData } from '../../src/model/index.js';
import { compileReplaySides, fetchRecordings, replay, type RawRecord } from '../../src/replay/index.js';

const registry = createDefaultRegistry();
const counting = (evaluator: ControlData['evaluator'], action: ControlData['action']): ControlData => ({
  enabled: true,
  execution: 'server',
  scope: { step_names: ['fetch_url'] },
  selector: { path: 'input' },
  evaluator,
  action,
});
const loopBreaker = counting({ name: 'repeat', config: { max: 2, window: '10m' } }, { decision: 'steer', steering_context: { message: 'change the approach' } });
const twoPerTenMinutes = counting({ name: 'rate', config: { limit: 2, window: '10m' } }, { decision: 'deny' });

const T0 = Date.parse('2026-12-01T10:00:00Z');
const rec = (label: string, url: string, options: { session?: string; at?: number } = {}): RawRecord => ({
  label,
  value: { agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'fetch_url', input: { url } }, ...(options.session ? { session_id: options.session } : {}) },
  ...(options.at !== undefined ? { at: options.at } : {}),
});

/** The server has none of the controls, the directory adds `added`; `kept` is on both. */
function sides(added: Record<string, ControlData>, kept: Record<string, ControlData> = {}) {
  const both = Object.entries(kept).map(([name, data]) => ({ name, data }));
  const now = [...both, ...Object.entries(added).map(([name, data]) => ({ name, data }))];
  return compileReplaySides(
    { controls: both, agents: [{ agent_name: 'bot', controls: both.map((c) => c.name) }] },
    { controls: now, agents: [{ agent_name: 'bot', controls: now.map((c) => c.name) }] },
    registry,
  );
}

const changesOf = async (s: ReturnType<typeof sides>, records: RawRecord[]) => {
  const report = await replay(records, s.before, s.after, { common: s.common });
  expect(report.skipped).toBe(0);
  return report.changes.map((c) => [c.from, c.to, c.count, c.examples.map((e) => e.label)]);
};

describe('replay: controls that count', () => {
  it('a new loop breaker steers only the call repeated past its max in its session', async () => {
    const records = [rec('r1', 'a', { session: 's' }), rec('r2', 'b', { session: 's' }), rec('r3', 'a', { session: 's' }), rec('r4', 'a', { session: 't' }), rec('r5', 'a', { session: 's' })];
    expect(await changesOf(sides({ 'break-loops': loopBreaker }), records)).toEqual([['allow', 'steer', 1, ['r5']]]);
  });

  it('a new rate limit denies the steps past its limit, counted at the times they were recorded', async () => {
    const minute = 60_000;
    const records = [rec('r1', 'a', { at: T0 }), rec('r2', 'b', { at: T0 + minute }), rec('r3', 'c', { at: T0 + 2 * minute }), rec('r4', 'd', { at: T0 + 30 * minute })];
    expect(await changesOf(sides({ 'two-per-ten-minutes': twoPerTenMinutes }), records)).toEqual([['allow', 'deny', 1, ['r3']]]);
    // Steps without times (a file's) count at one instant.
    expect(await changesOf(sides({ 'two-per-ten-minutes': twoPerTenMinutes }), [rec('l1', 'a'), rec('l2', 'b'), rec('l3', 'c')])).toEqual([['allow', 'deny', 1, ['l3']]]);
  });

  it('a counting control both sides hold changes nothing, in sessions or not', async () => {
    const records = [rec('r1', 'a', { session: 's' }), rec('r2', 'a'), rec('r3', 'a', { session: 's' }), rec('r4', 'a', { session: 's' }), rec('r5', 'a')];
    expect(await changesOf(sides({}, { 'two-per-ten-minutes': twoPerTenMinutes, 'break-loops': loopBreaker }), records)).toEqual([]);
  });

  it('recordings read from the server carry the time each step was recorded', async () => {
    const step = { type: 'tool', name: 'fetch_url', input: {} };
    const page = { steps: [{ id: 1, timestamp: '2026-12-01T10:00:00.000Z', agent_name: 'bot', stage: 'pre', step, decision: 'allow', session_id: null }], next_cursor: null };
    const read = await fetchRecordings({ listRecordings: async () => page }, { limit: 10 });
    expect(read.records.map((r) => r.at)).toEqual([T0]);
  });
});
