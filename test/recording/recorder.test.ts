import { afterEach, describe, expect, it } from 'vitest';
import { REDACTED, StepRecorder, type RecorderOptions } from '../../src/recording/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Step } from '../../src/model/index.js';

const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

function setup(options: Partial<RecorderOptions> = {}) {
  const store = new SqliteStore(':memory:');
  stores.push(store);
  const recorder = new StepRecorder(store, {
    sampleRate: 1,
    maxStepBytes: 16_384,
    retentionDays: 7,
    redact: [],
    flushIntervalMs: 60_000,
    ...options,
  });
  return { store, recorder };
}

const step = (input: unknown): Step => ({ type: 'tool', name: 'run_sql', input });
const all = async (store: SqliteStore) => (await store.queryRecordedSteps({ limit: 1000 })).steps;

describe('StepRecorder', () => {
  it('sample rate 1 records every step, 0 records none', async () => {
    const on = setup({ sampleRate: 1 });
    const off = setup({ sampleRate: 0 });
    for (let i = 0; i < 20; i++) {
      on.recorder.record({ agent_name: 'bot', stage: 'pre', step: step({ i }), decision: 'allow' });
      off.recorder.record({ agent_name: 'bot', stage: 'pre', step: step({ i }), decision: 'allow' });
    }
    await on.recorder.close();
    await off.recorder.close();
    expect(await all(on.store)).toHaveLength(20);
    expect(await all(off.store)).toHaveLength(0);
    expect(off.recorder.stats.sampled_out).toBe(20);
  });

  it('a fractional rate keeps the steps whose draw falls under it', async () => {
    const draws = [0.1, 0.9, 0.2, 0.8];
    const { store, recorder } = setup({ sampleRate: 0.5, random: () => draws.shift()! });
    for (let i = 0; i < 4; i++) recorder.record({ agent_name: 'bot', stage: 'pre', step: step({ i }), decision: 'allow' });
    await recorder.close();
    expect((await all(store)).map((r) => (r.step as { input: { i: number } }).input.i)).toEqual([0, 2]);
  });

  it('skips steps larger than the cap after redaction, and counts them', async () => {
    const { store, recorder } = setup({ maxStepBytes: 200 });
    recorder.record({ agent_name: 'bot', stage: 'pre', step: step({ q: 'x'.repeat(500) }), decision: 'deny' });
    // Redaction happens first: a large secret does not make the step too large.
    recorder.record({ agent_name: 'bot', stage: 'pre', step: step({ password: 'x'.repeat(500) }), decision: 'allow' });
    await recorder.close();
    const rows = await all(store);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.step).toEqual({ type: 'tool', name: 'run_sql', input: { password: REDACTED } });
    expect(recorder.stats.too_large).toBe(1);
  });

  it('stores redacted steps with agent, stage, decision and time', async () => {
    const { store, recorder } = setup({ redact: ['input.card_number'], now: () => Date.parse('2030-01-01T00:00:00Z') });
    recorder.record({
      agent_name: 'bot',
      stage: 'post',
      step: { type: 'llm', name: 'm', input: { card_number: '4111', q: 'hi' }, output: 'ok', context: { user: { api_key: 'k' } } },
      decision: 'steer',
    });
    await recorder.close();
    expect(await all(store)).toEqual([
      {
        id: 1,
        timestamp: '2030-01-01T00:00:00.000Z',
        agent_name: 'bot',
        stage: 'post',
        decision: 'steer',
        step: { type: 'llm', name: 'm', input: { card_number: REDACTED, q: 'hi' }, output: 'ok', context: { user: { api_key: REDACTED } } },
        session_id: null,
      },
    ]);
  });

  it('drops new steps when the queue is full instead of growing', async () => {
    const { store, recorder } = setup({ maxQueue: 3 });
    for (let i = 0; i < 5; i++) recorder.record({ agent_name: 'bot', stage: 'pre', step: step({ i }), decision: 'allow' });
    expect(recorder.stats.dropped).toBe(2);
    await recorder.close();
    expect(await all(store)).toHaveLength(3);
  });

  it('a failing store write is counted and never thrown', async () => {
    const errors: unknown[] = [];
    const recorder = new StepRecorder(
      { insertRecordedSteps: () => Promise.reject(new Error('disk full')), pruneRecordedSteps: () => Promise.resolve(0) },
      { sampleRate: 1, maxStepBytes: 1000, retentionDays: 1, redact: [], flushIntervalMs: 60_000, onError: (e) => errors.push(e) },
    );
    expect(recorder.record({ agent_name: 'bot', stage: 'pre', step: step({}), decision: 'allow' })).toBe(true);
    await recorder.close();
    expect(recorder.stats.failed_writes).toBe(1);
    expect(errors).toHaveLength(1);
  });

  it('prunes steps older than the retention age', async () => {
    let now = Date.parse('2030-01-01T00:00:00Z');
    const { store, recorder } = setup({ retentionDays: 7, now: () => now });
    recorder.record({ agent_name: 'bot', stage: 'pre', step: step({ old: true }), decision: 'allow' });
    await recorder.flush();
    now += 8 * 86_400_000;
    recorder.record({ agent_name: 'bot', stage: 'pre', step: step({ old: false }), decision: 'allow' });
    await recorder.flush();
    expect(await recorder.prune()).toBe(1);
    expect((await all(store)).map((r) => (r.step as { input: { old: boolean } }).input.old)).toEqual([false]);
    await recorder.close();
  });
});
