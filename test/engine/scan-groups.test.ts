import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, type EvaluationOutcome } from '../../src/engine/index.js';
import { HOT_AFTER, scanGroupsOf } from '../../src/engine/scan-groups.js';
import { OFFLOAD_MIN_BYTES } from '../../src/evaluators/regex/re2.js';
import { createDefaultRegistry, EvaluatorRegistry } from '../../src/evaluators/registry.js';
import type { CompiledCheck } from '../../src/evaluators/types.js';
import type { Step } from '../../src/model/index.js';
import { control, regexControl, toolStep } from './helpers.js';

const registry = createDefaultRegistry();
const sync = (o: EvaluationOutcome | Promise<EvaluationOutcome>) => o as EvaluationOutcome;

/** Regex controls on two fields, a list control and a condition tree: only regex leaves of one field group. */
const mixed = [
  regexControl('drop', '(?i)\\bdrop\\s+table\\b', { selector: { path: 'input.query' } }),
  regexControl('truncate', '(?i)\\btruncate\\b', { selector: { path: 'input.query' } }),
  regexControl('card', '\\b\\d{4}-\\d{4}-\\d{4}-\\d{4}\\b', { selector: { path: 'input.query' }, action: { decision: 'steer', steering_context: { message: 'mask the card' } } }),
  regexControl('secret-anywhere', 'sk_live_[a-z0-9]+'),
  regexControl('password-anywhere', '(?i)password='),
  control('list', {
    selector: { path: 'input.query' },
    evaluator: { name: 'list', config: { values: ['grant'], match_mode: 'contains' } },
    action: { decision: 'deny' },
  }),
  control('tree', {
    condition: {
      and: [
        { selector: { path: 'input.query' }, evaluator: { name: 'regex', config: { pattern: 'delete' } } },
        { selector: { path: 'name' }, evaluator: { name: 'regex', config: { pattern: 'sql' } } },
      ],
    },
    action: { decision: 'deny' },
  }),
];
const compileMixed = () => compileControls(mixed, registry);

const steps: Step[] = [
  toolStep('run_sql', { query: 'SELECT 1' }),
  toolStep('run_sql', { query: 'drop table users' }),
  toolStep('run_sql', { query: 'TRUNCATE t; DROP TABLE u' }),
  toolStep('run_sql', { query: 'pay with 4111-1111-1111-1111 please' }),
  toolStep('run_sql', { query: 'grant all; delete from x' }),
  toolStep('run_sql', { query: 'SELECT 1', token: 'sk_live_abc123' }),
  toolStep('run_sql', { query: 42 }),
  toolStep('run_sql', { other: 'no query here: password=hunter2' }),
  toolStep('run_sql', { query: 'ünïcödé DROP   TABLE ä' }),
  // RE2 folds "ſ" with "s": the literal prefilters must not rule these out.
  toolStep('run_sql', { query: 'TRUNCATE ſchema', other: 'PAſſWORD=1' }),
];

describe('regex controls of one field scanned together', () => {
  it('builds groups only once a candidate list is hot, and only for regex leaves sharing a field', () => {
    const set = compileMixed();
    const step = toolStep('run_sql', { query: 'SELECT 1' });
    for (let i = 0; i < HOT_AFTER - 1; i++) sync(evaluateStep(set, step, 'pre'));
    const candidates = set.byName.pre?.tool?.get('run_sql');
    expect(candidates).toBeDefined();
    sync(evaluateStep(set, step, 'pre'));
    const groups = scanGroupsOf(candidates!);
    expect(groups?.map((g) => [g.selector.path, g.members.map((i) => candidates![i]!.name)])).toEqual([
      ['input.query', ['drop', 'truncate', 'card']],
      ['input', ['secret-anywhere', 'password-anywhere']],
    ]);
  });

  it('answers exactly what one-by-one evaluation answers, before and after the list is hot', () => {
    const cold = compileMixed();
    const hot = compileMixed();
    const warm = toolStep('run_sql', { query: 'warm up' });
    for (let i = 0; i < HOT_AFTER; i++) sync(evaluateStep(hot, warm, 'pre'));
    for (const step of steps) {
      // A fresh cold set per step keeps it below the threshold: it always runs one by one.
      const expected = sync(evaluateStep(compileMixed(), step, 'pre')).result;
      expect(sync(evaluateStep(hot, step, 'pre')).result).toEqual(expected);
      expect(sync(evaluateStep(cold, step, 'pre')).result).toEqual(expected);
    }
  });

  it('finds what RE2 case folding matches, hot and cold', () => {
    const hot = compileMixed();
    const warm = toolStep('run_sql', { query: 'warm up' });
    for (let i = 0; i < HOT_AFTER; i++) sync(evaluateStep(hot, warm, 'pre'));
    for (const set of [hot, compileMixed()]) {
      const result = sync(evaluateStep(set, steps.at(-1)!, 'pre')).result;
      expect(result.matches.map((m) => m.control_name)).toEqual(['truncate', 'password-anywhere']);
    }
  });

  it('gives scanned non-matches an execution record with a share of the pass time', () => {
    const set = compileMixed();
    const warm = toolStep('run_sql', { query: 'warm up' });
    for (let i = 0; i < HOT_AFTER; i++) sync(evaluateStep(set, warm, 'pre', { collectExecutions: true }));
    const outcome = sync(evaluateStep(set, toolStep('run_sql', { query: 'drop table x' }), 'pre', { collectExecutions: true }));
    const byName = new Map(outcome.executions!.map((x) => [x.control_name, x]));
    expect(outcome.executions).toHaveLength(7);
    expect(byName.get('drop')).toMatchObject({ matched: true, excerpt: 'd…e x', evaluator_name: 'regex' });
    // The 'input' group found nothing: both members are non-matches with a timing.
    for (const name of ['secret-anywhere', 'password-anywhere']) {
      const x = byName.get(name)!;
      expect(x).toMatchObject({ matched: false, error_message: null, excerpt: null });
      expect(x.duration_ms).toBeGreaterThanOrEqual(0);
    }
    expect(outcome.result.matches.map((m) => m.control_name)).toEqual(['drop']);
  });

  it("times a slow pass into its members' shares, and the controls' times add up to the step's", () => {
    const set = compileMixed();
    const warm = toolStep('run_sql', { query: 'warm up' });
    for (let i = 0; i < HOT_AFTER; i++) sync(evaluateStep(set, warm, 'pre', { collectExecutions: true }));
    // Text under `input` that no pattern of the 'input' group matches: its pass is the slow
    // part. (Just short of OFFLOAD_MIN_BYTES: a longer text goes to the members, off the loop.)
    const step = toolStep('run_sql', { query: 'SELECT 1', blob: 'x'.repeat(OFFLOAD_MIN_BYTES - 1024) });
    const started = performance.now();
    const outcome = sync(evaluateStep(set, step, 'pre', { collectExecutions: true }));
    const elapsed = performance.now() - started;
    const byName = new Map(outcome.executions!.map((x) => [x.control_name, x.duration_ms]));
    const inputShares = [byName.get('secret-anywhere')!, byName.get('password-anywhere')!];
    expect(inputShares[0]).toBeGreaterThan(0);
    expect(inputShares[0]).toBe(inputShares[1]);
    // Each member carries half of a pass that took most of the step's time.
    expect(inputShares[0]! * 2).toBeGreaterThan(byName.get('drop')! + byName.get('truncate')! + byName.get('card')!);
    const total = outcome.executions!.reduce((sum, x) => sum + x.duration_ms, 0);
    expect(total).toBeLessThanOrEqual(elapsed);
    expect(total).toBeGreaterThan(elapsed / 4);
  });
});

/** List controls join a field's scan when every member of it declares literals. */
const withLists = [
  regexControl('drop', '(?i)\\bdrop\\s+table\\b', { selector: { path: 'input.query' } }),
  regexControl('truncate', '(?i)\\btruncate\\b', { selector: { path: 'input.query' } }),
  control('grant', {
    selector: { path: 'input.query' },
    evaluator: { name: 'list', config: { values: ['grant', 'REVOKE'], match_mode: 'contains' } },
    action: { decision: 'deny' },
  }),
  control('sudo', {
    selector: { path: 'input.query' },
    evaluator: { name: 'list', config: { values: ['sudo '], match_mode: 'starts_with', case_sensitive: true } },
    action: { decision: 'steer', steering_context: { message: 'no sudo' } },
  }),
  control('both', {
    selector: { path: 'input.query' },
    evaluator: { name: 'list', config: { values: ['alpha', 'beta'], match_mode: 'contains', logic: 'all' } },
    action: { decision: 'warn' },
  }),
  // An exact list answers with a set lookup: it declares nothing and runs on its own.
  control('exact', {
    selector: { path: 'input.query' },
    evaluator: { name: 'list', config: { values: ['select 1'] } },
    action: { decision: 'log' },
  }),
  regexControl('secret', 'sk_live_[a-z0-9]+'),
  control('password', {
    selector: { path: 'input' },
    evaluator: { name: 'list', config: { values: ['password', 'dropi'], match_mode: 'contains' } },
    action: { decision: 'deny' },
  }),
];
const compileWithLists = () => compileControls(withLists, registry);

const listSteps: Step[] = [
  toolStep('run_sql', { query: 'SELECT 1' }),
  toolStep('run_sql', { query: 'GRANT ALL ON t TO bob' }),
  toolStep('run_sql', { query: 'sudo rm -rf /' }),
  toolStep('run_sql', { query: 'Sudo rm' }),
  toolStep('run_sql', { query: 'alpha then beta' }),
  toolStep('run_sql', { query: 'alpha alone' }),
  toolStep('run_sql', { query: ['nothing', 'revoke it', 'alpha', 'beta'] }),
  // Array elements appear escaped in the array's JSON text: entries are still found.
  toolStep('run_sql', { query: ['say "grant"\n', 'back\\slash', 'tab\tsudo '] }),
  toolStep('run_sql', { query: [{ nested: 'GRANT' }, 42, true, null] }),
  toolStep('run_sql', { query: 42 }),
  toolStep('run_sql', { query: { text: 'drop table x' } }),
  toolStep('run_sql', { query: 'select 1' }),
  toolStep('run_sql', { other: 'my PASSWORD is ſecret' }),
  // "İ" lowercases to "i" and a combining dot, "ſ" stays itself for lists (RE2 folds it to s).
  toolStep('run_sql', { query: 'DROPİ', note: 'DROPİ' }),
  toolStep('run_sql', { query: 'ſudo grant', token: 'sk_live_abc' }),
  // Values only JavaScript callers (the SDK) can hand over: read as JSON would read them.
  toolStep('run_sql', { query: [Number.NaN, Number.POSITIVE_INFINITY, 'grant'] }),
  toolStep('run_sql', { query: Number.POSITIVE_INFINITY }),
];

describe('list controls scanned with the regex controls of their field', () => {
  it('join the group of their field; lists without literals and fields without a full set of literals stay out', () => {
    const set = compileWithLists();
    const step = toolStep('run_sql', { query: 'SELECT 1' });
    for (let i = 0; i < HOT_AFTER; i++) sync(evaluateStep(set, step, 'pre'));
    const candidates = set.byName.pre.tool.get('run_sql')!;
    const names = (positions: readonly number[]) => positions.map((i) => candidates[i]!.name);
    const groups = scanGroupsOf(candidates)!;
    expect(groups.map((g) => [g.selector.path, names(g.members), names(g.setMembers)])).toEqual([
      ['input.query', ['drop', 'truncate', 'grant', 'sudo', 'both'], ['drop', 'truncate']],
      ['input', ['secret', 'password'], []],
    ]);
    // The mixed set above: a regex member without literals keeps the list out of its group.
    const mixedSet = compileMixed();
    for (let i = 0; i < HOT_AFTER; i++) sync(evaluateStep(mixedSet, step, 'pre'));
    const mixedCandidates = mixedSet.byName.pre.tool.get('run_sql')!;
    const queryGroup = scanGroupsOf(mixedCandidates)!.find((g) => g.selector.path === 'input.query')!;
    expect(queryGroup.members.map((i) => mixedCandidates[i]!.name)).not.toContain('list');
  });

  it('answers exactly what one-by-one evaluation answers, with and without execution records', () => {
    const hot = compileWithLists();
    const warm = toolStep('run_sql', { query: 'warm up' });
    for (let i = 0; i < HOT_AFTER; i++) sync(evaluateStep(hot, warm, 'pre'));
    for (const step of listSteps) {
      const expected = sync(evaluateStep(compileWithLists(), step, 'pre')).result;
      expect(sync(evaluateStep(hot, step, 'pre')).result, JSON.stringify(step.input)).toEqual(expected);
      expect(sync(evaluateStep(hot, step, 'pre', { collectExecutions: true })).result).toEqual(expected);
    }
  });

  it('finds what the lists match in escaped, nested and folded text', () => {
    const hot = compileWithLists();
    const warm = toolStep('run_sql', { query: 'warm up' });
    for (let i = 0; i < HOT_AFTER; i++) sync(evaluateStep(hot, warm, 'pre'));
    const matched = (step: Step) => sync(evaluateStep(hot, step, 'pre')).result.matches.map((m) => m.control_name);
    expect(matched(listSteps[7]!)).toEqual(['grant']);
    expect(matched(listSteps[8]!)).toEqual(['grant']);
    expect(matched(listSteps[6]!)).toEqual(['grant', 'both']);
    expect(matched(listSteps[12]!)).toEqual(['password']);
    expect(matched(listSteps[13]!)).toEqual(['password']);
    expect(matched(listSteps[14]!)).toEqual(['grant', 'secret']);
    expect(matched(listSteps[15]!)).toEqual(['grant']);
    expect(matched(listSteps[0]!)).toEqual(['exact']);
  });
});

describe('a field whose set finds some patterns', () => {
  /** The default evaluators, with the regex checks run counted by pattern. */
  function countingRegexRegistry(runs: string[]): EvaluatorRegistry {
    const base = createDefaultRegistry();
    const out = new EvaluatorRegistry();
    for (const name of base.names()) {
      const def = base.get(name)!;
      if (name !== 'regex') {
        out.register(def);
        continue;
      }
      out.register({
        ...def,
        compile(config, parts, site) {
          const check = def.compile(config, parts, site);
          const counted: CompiledCheck = (value, memo) => {
            runs.push((config as { pattern: string }).pattern);
            return check(value, memo);
          };
          // The check's own properties (its scan hint) go along, so the field is scanned as usual.
          return Object.assign(counted, check);
        },
      });
    }
    return out;
  }

  const patterns: Record<string, string> = {
    ssn: '\\b\\d{3}-\\d{2}-\\d{4}\\b',
    email: '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}',
    card: '\\b(?:\\d[ -]?){13,16}\\b',
    key: '\\b(sk|pk)_(live|test)_[0-9a-zA-Z]{16,}\\b',
  };
  const outputControls = Object.entries(patterns).map(([name, pattern]) =>
    regexControl(name, pattern, { selector: { path: 'output' }, ...(name === 'email' && { action: { decision: 'log' } }) }),
  );
  const answer = (output: string): Step => ({ type: 'llm', name: 'model', input: 'q', output });

  it('runs only the members whose pattern occurs, and answers as one-by-one evaluation does', () => {
    const runs: string[] = [];
    const set = compileControls(outputControls, countingRegexRegistry(runs));
    for (let i = 0; i < HOT_AFTER; i++) sync(evaluateStep(set, answer('warm up'), 'post'));
    const texts = [
      'write to support@shop.example for help',
      'SSN 123-45-6789 and mail bob@example.com',
      'nothing to see here',
      'key sk_live_0123456789abcdefghij and 4111 1111 1111 1111',
    ];
    const expectedRuns = [['email'], ['ssn', 'email'], [], ['card', 'key']];
    texts.forEach((text, i) => {
      runs.length = 0;
      const hot = sync(evaluateStep(set, answer(text), 'post')).result;
      const ran = Object.keys(patterns).filter((name) => runs.includes(patterns[name]!));
      expect(ran).toEqual(expectedRuns[i]);
      expect(hot).toEqual(sync(evaluateStep(compileControls(outputControls, registry), answer(text), 'post')).result);
    });
  });
});
