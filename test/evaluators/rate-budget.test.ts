import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, validateControlData, type EvaluationOutcome } from '../../src/engine/index.js';
import { MemoryCounters, parseWindow } from '../../src/counting/index.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';
import type { ControlDataInput } from '../../src/model/index.js';
import { control, toolStep } from '../engine/helpers.js';

const registry = createDefaultRegistry();

function rateControl(config: Record<string, unknown>, extra: Partial<ControlDataInput> = {}) {
  return control('calls-per-minute', {
    scope: { step_types: ['tool'], stages: ['pre'] },
    selector: { path: '*' },
    evaluator: { name: 'rate', config },
    action: { decision: 'deny' },
    ...extra,
  });
}

function budgetControl(config: Record<string, unknown>) {
  return control('spend-per-day', {
    scope: { step_types: ['tool'], step_names: ['pay'], stages: ['pre'] },
    selector: { path: '*' },
    evaluator: { name: 'budget', config },
    action: { decision: 'deny' },
  });
}

/** A clock the test moves by hand. */
function clock(start = Date.UTC(2026, 0, 1, 12, 0, 0)) {
  const c = { t: start, now: () => c.t };
  return c;
}

function run(set: ReturnType<typeof compileControls>, counters: MemoryCounters, input: unknown = {}, agentName = 'bot', context?: Record<string, unknown>) {
  const out = evaluateStep(set, toolStep('search', input, context ? { context } : {}), 'pre', { agentName, counters });
  if (out instanceof Promise) throw new Error('memory counters answer synchronously');
  return (out).result;
}

describe('rate', () => {
  it('allows exactly limit steps in the window, then refuses', () => {
    const c = clock();
    const counters = new MemoryCounters({ now: c.now });
    const set = compileControls([rateControl({ limit: 5, window: '1m' })], registry);
    const decisions = Array.from({ length: 8 }, () => run(set, counters).decision);
    expect(decisions).toEqual(['allow', 'allow', 'allow', 'allow', 'allow', 'deny', 'deny', 'deny']);
    const denied = run(set, counters);
    expect(denied.matches[0]!.result.message).toBe('rate limit reached: 9 steps of 5 in 1m');
    expect(denied.matches[0]!.result.metadata).toEqual({ used: 9, limit: 5, window: '1m' });
  });

  it('gives a burst straddling a window edge no more than the limit', () => {
    const c = clock(Date.UTC(2026, 0, 1, 12, 0, 59, 900));
    const counters = new MemoryCounters({ now: c.now });
    const set = compileControls([rateControl({ limit: 10, window: '1m' })], registry);
    let allowed = 0;
    // 10 steps just before the minute turns, 10 just after: a fixed window would allow 20.
    for (let i = 0; i < 10; i++) if (run(set, counters).decision === 'allow') allowed++;
    c.t += 200;
    for (let i = 0; i < 10; i++) if (run(set, counters).decision === 'allow') allowed++;
    expect(allowed).toBe(10);
  });

  it('forgets steps once the window (plus at most one bucket) has passed', () => {
    const c = clock();
    const counters = new MemoryCounters({ now: c.now });
    const set = compileControls([rateControl({ limit: 3, window: '1m' })], registry);
    for (let i = 0; i < 3; i++) expect(run(set, counters).decision).toBe('allow');
    expect(run(set, counters).decision).toBe('deny');
    c.t += 60_000 - 1; // still inside the window: every step of it counts
    expect(run(set, counters).decision).toBe('deny');
    c.t += 60_000 / 60 + 60_000 + 1; // a bucket after the window of the last refused step
    expect(run(set, counters).decision).toBe('allow');
  });

  it('keeps one counter per key value', () => {
    const c = clock();
    const counters = new MemoryCounters({ now: c.now });
    const set = compileControls([rateControl({ limit: 1, window: '1h', key: 'context.user_id' })], registry);
    expect(run(set, counters, {}, 'bot', { user_id: 'a' }).decision).toBe('allow');
    expect(run(set, counters, {}, 'bot', { user_id: 'b' }).decision).toBe('allow');
    expect(run(set, counters, {}, 'bot', { user_id: 'a' }).decision).toBe('deny');
    // The default key is the agent.
    const byAgent = compileControls([rateControl({ limit: 1, window: '1h' })], registry);
    expect(run(byAgent, counters, {}, 'one').decision).toBe('allow');
    expect(run(byAgent, counters, {}, 'two').decision).toBe('allow');
    expect(run(byAgent, counters, {}, 'one').decision).toBe('deny');
  });

  it('counts a 10 KB key under a digest', () => {
    const counters = new MemoryCounters();
    const set = compileControls([rateControl({ limit: 1, window: '1m', key: 'input.account' })], registry);
    const long = 'k'.repeat(10_000);
    run(set, counters, { account: long });
    expect(run(set, counters, { account: long }).decision).toBe('deny');
    const keys = counters.usage().map((u) => u.key);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('stays within its key cap, drops idle keys, and fails (on_error) beyond the cap', () => {
    const c = clock();
    const counters = new MemoryCounters({ now: c.now, maxKeys: 1000 });
    const set = compileControls([rateControl({ limit: 1, window: '10s', key: 'input.account' })], registry);
    for (let i = 0; i < 1000; i++) run(set, counters, { account: `a${i}` });
    expect(counters.size).toBe(1000);
    const refused = run(set, counters, { account: 'one-too-many' });
    // A deny control fails closed by default.
    expect(refused.decision).toBe('deny');
    expect(refused.matches[0]!.error).toMatch(/too many distinct keys/);
    c.t += 30_000; // every key is idle now
    for (let i = 0; i < 1000; i++) run(set, counters, { account: `b${i}` });
    expect(counters.size).toBe(1000);
    expect(run(set, counters, { account: 'b1' }).decision).toBe('deny');
  });

  it('caps keys per control: one control at its cap leaves every other rate and budget control counting (issue #34 item 13)', () => {
    const c = clock();
    const counters = new MemoryCounters({ now: c.now, maxKeys: 100 });
    const flood = compileControls([rateControl({ limit: 5, window: '1m', key: 'input.account' })], registry);
    const other = compileControls([{ ...rateControl({ limit: 1, window: '1m', key: 'input.user' }), control_id: 2, name: 'per-user' }], registry);
    const spend = compileControls([{ ...budgetControl({ limit: 10, window: '1d', amount: 'input.amount', key: 'input.user' }), control_id: 3 }], registry);
    for (let i = 0; i < 100; i++) run(flood, counters, { account: `a${i}` });
    // The flooded control fails closed, visibly: an evaluator error on a deny control.
    const refused = run(flood, counters, { account: 'one-too-many' });
    expect(refused.decision).toBe('deny');
    expect(refused.matches[0]!.error).toMatch(/too many distinct keys/);
    // Its known keys go on counting.
    expect(run(flood, counters, { account: 'a1' }).errors).toEqual([]);
    // Other controls still take new keys, and decide by their counts.
    for (let i = 0; i < 50; i++) expect(run(other, counters, { user: `u${i}` }).decision).toBe('allow');
    expect(run(other, counters, { user: 'u1' }).decision).toBe('deny');
    const paid = evaluateStep(spend, toolStep('pay', { amount: 4, user: 'new-user' }), 'pre', { counters }) as EvaluationOutcome;
    expect(paid.result.errors).toEqual([]);
    expect(paid.result.decision).toBe('allow');
  });

  it('fails by on_error where no counters are provided', () => {
    const set = compileControls([rateControl({ limit: 1, window: '1m', on_error: 'allow' })], registry);
    const out = evaluateStep(set, toolStep('search', {}), 'pre') as EvaluationOutcome;
    expect(out.result.decision).toBe('allow');
    expect(out.result.errors[0]!.error).toMatch(/counts steps on the server/);
  });
});

describe('budget', () => {
  it('refuses the step that would take the sum over max, and it spends nothing', () => {
    const counters = new MemoryCounters();
    const set = compileControls([budgetControl({ max: 100, window: '24h', amount: 'input.amount_usd' })], registry);
    const pay = (amount: unknown) => {
      const out = evaluateStep(set, toolStep('pay', { amount_usd: amount }), 'pre', { agentName: 'bot', counters }) as EvaluationOutcome;
      return out.result;
    };
    expect(pay(60).decision).toBe('allow');
    expect(pay(50).decision).toBe('deny');
    expect(pay(40).decision).toBe('allow'); // exactly 100
    expect(pay(0.01).decision).toBe('deny');
    expect(pay(0).decision).toBe('allow');
  });

  it('treats a missing, non-numeric or negative amount as an evaluator error', () => {
    const counters = new MemoryCounters();
    const set = compileControls([budgetControl({ max: 100, window: '1h', amount: 'input.amount_usd' })], registry);
    for (const input of [{}, { amount_usd: '12' }, { amount_usd: -5 }]) {
      const out = evaluateStep(set, toolStep('pay', input), 'pre', { agentName: 'bot', counters }) as EvaluationOutcome;
      expect(out.result.decision).toBe('deny');
      expect(out.result.matches[0]!.error).toMatch(/amount/);
    }
  });
});

describe('validation', () => {
  const issues = (config: Record<string, unknown>, name = 'rate', extra: Record<string, unknown> = {}) => {
    const r = validateControlData({ selector: { path: '*' }, evaluator: { name, config }, action: { decision: 'deny' }, ...extra }, registry);
    return r.ok ? [] : r.issues;
  };

  it('refuses bad configs with field paths', () => {
    expect(issues({ limit: 0, window: '1m' })[0]).toMatchObject({ field: 'evaluator.config.limit' });
    expect(issues({ limit: 5, window: '1w' })[0]).toMatchObject({ field: 'evaluator.config.window' });
    expect(issues({ limit: 5, window: '31d' })[0]!.message).toMatch(/longer than 30 days/);
    expect(issues({ limit: 5, window: '1m', key: 'user_id' })[0]).toMatchObject({ field: 'evaluator.config.key' });
    expect(issues({ max: 5, window: '1m', amount: 'amount_usd' }, 'budget')[0]).toMatchObject({
      field: 'evaluator.config.amount',
      message: expect.stringMatching(/not a selector path/),
    });
    expect(issues({ limit: 5, window: '30d' })).toEqual([]);
  });

  it('refuses execution: sdk with the reason', () => {
    const found = issues({ limit: 5, window: '1m' }, 'rate', { execution: 'sdk' });
    expect(found).toEqual([expect.objectContaining({ field: 'execution', message: expect.stringMatching(/cannot run with execution: sdk/) })]);
  });

  it('parses windows', () => {
    expect(parseWindow('10s')).toBe(10_000);
    expect(parseWindow('7d')).toBe(7 * 86_400_000);
    expect(parseWindow('0m')).toMatch(/not a duration/);
  });
});
