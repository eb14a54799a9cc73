import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, type EvaluationOutcome } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { control, regexControl, toolStep } from './helpers.js';

const registry = createDefaultRegistry();
const sync = (o: EvaluationOutcome | Promise<EvaluationOutcome>) => o as EvaluationOutcome;

// Several controls selecting the same object share its text within one step; nothing of
// it may leak into the next evaluation, even when the caller reuses and mutates the object
// (the SDK checks the same input object before and after a call).
describe('text shared between the checks of one step', () => {
  const set = compileControls(
    [
      regexControl('regex-on-input', '(?i)drop\\s+table'),
      control('list-on-input', {
        selector: { path: 'input' },
        evaluator: { name: 'list', config: { values: ['TRUNCATE'], match_mode: 'contains' } },
        action: { decision: 'deny' },
      }),
    ],
    registry,
  );

  it('lets every control see the same selected object', () => {
    const input = { query: 'DROP TABLE t; truncate u' };
    const names = sync(evaluateStep(set, toolStep('run_sql', input), 'pre')).result.matches.map((m) => m.control_name);
    expect(names.sort()).toEqual(['list-on-input', 'regex-on-input']);
  });

  it('never serves the text of an earlier evaluation of a mutated object', () => {
    const input = { query: 'select 1' };
    const step = toolStep('run_sql', input);
    expect(sync(evaluateStep(set, step, 'pre')).result.decision).toBe('allow');
    input.query = 'drop table users';
    expect(sync(evaluateStep(set, step, 'pre')).result.decision).toBe('deny');
    input.query = 'TRUNCATE users';
    expect(sync(evaluateStep(set, step, 'pre')).result.matches.map((m) => m.control_name)).toEqual(['list-on-input']);
  });

  it('quotes the matched text exactly after non-ASCII characters (byte offsets on the shared UTF-8)', () => {
    // reveal_match: the message quotes the match in full, so its ends can be checked.
    const revealing = compileControls([regexControl('regex-on-input', '(?i)drop\\s+table', { reveal_match: true })], registry);
    const step = toolStep('run_sql', { query: 'Ä ö 😀 — DROP   TABLE users' });
    const match = sync(evaluateStep(revealing, step, 'pre')).result.matches[0];
    expect(match?.result.message).toBe('pattern matched "DROP   TABLE"');
    // Masked by default, from the same offsets.
    expect(sync(evaluateStep(set, step, 'pre')).result.matches.find((m) => m.control_name === 'regex-on-input')?.result.message).toBe(
      'pattern matched "D…E"',
    );
  });
});
