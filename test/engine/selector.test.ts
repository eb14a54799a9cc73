import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, parseSelector } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';
import type { Step } from '../../src/model/index.js';
import { control } from './helpers.js';

const registry = createDefaultRegistry();

const step: Step = {
  type: 'llm',
  name: 'gpt-chat',
  input: {
    query: 'select 1',
    messages: [
      { role: 'system', content: 'be nice' },
      { role: 'user', content: 'secret: hunter2' },
    ],
    nested: { deep: { flag: true } },
    'dash-key': 'dashed',
  },
  output: 'the answer is 42',
  context: { user_id: 'u-7', tenant: { id: 'acme' } },
};

/** Whether a list control looking for `value` at `path` matches, via exact or contains. */
async function selects(path: string, pattern: string): Promise<{ matched: boolean; evaluated: boolean }> {
  const set = compileControls(
    [
      control('sel', {
        selector: { path },
        evaluator: { name: 'regex', config: { pattern } },
        action: { decision: 'deny' },
      }),
    ],
    registry,
  );
  const { result } = await evaluateStep(set, step, 'pre');
  return { matched: result.matches.length === 1, evaluated: result.matches.length + result.non_matches.length === 1 };
}

type Case = [path: string, pattern: string, matched: boolean];

const cases: Case[] = [
  ['input', 'hunter2', true], // whole input object, searched as JSON
  ['input', '"query"', true], // keys are part of the JSON text
  ['input.query', '^select 1$', true],
  ['input.messages[1].content', '^secret', true],
  ['input.messages.1.content', '^secret', true],
  ['input.messages[0].content', 'secret', false],
  ['input.messages[5].content', '.*', false], // index out of range selects nothing
  ['input.missing', '.*', false], // missing field selects nothing; nothing never matches
  ['input.query.deeper', '.*', false], // path through a string selects nothing
  ['input.nested.deep.flag', '^true$', true], // non-string value as JSON
  ['input.dash-key', '^dashed$', true],
  ['input.constructor', '.*', false], // only own properties
  ['input.__proto__', '^\\{\\}$', false], // not the prototype (it would read as {})
  ['output', '42', true],
  ['output.x', '.*', false],
  ['name', '^gpt-chat$', true],
  ['context.user_id', '^u-7$', true],
  ['context.tenant.id', '^acme$', true],
  ['context.nope', '.*', false],
  ['*', '"type":"llm"', true], // the whole step
  ['*', '"output":"the answer is 42"', true],
  ['*', 'u-7', true],
];

describe('selector paths', () => {
  it.each(cases)('%s ~ /%s/ -> %s', async (path, pattern, matched) => {
    expect((await selects(path, pattern)).matched).toBe(matched);
  });

  it('a missing output selects nothing (the control is evaluated but does not match)', async () => {
    const set = compileControls(
      [control('out', { selector: { path: 'output' }, evaluator: { name: 'regex', config: { pattern: '.*' } }, action: { decision: 'deny' } })],
      registry,
    );
    const { result } = await evaluateStep(set, { type: 'tool', name: 't', input: 'x' }, 'pre');
    expect(result.non_matches).toHaveLength(1);
    expect(result.decision).toBe('allow');
  });

  it('parses dotted and indexed paths to the same walk', () => {
    const a = parseSelector('input.messages[0].content');
    const b = parseSelector('input.messages.0.content');
    expect(typeof a).toBe('object');
    expect(typeof b).toBe('object');
    if (typeof a === 'string' || typeof b === 'string') return;
    expect(a.segments).toEqual(['messages', 0, 'content']);
    expect(b.segments).toEqual(['messages', '0', 'content']);
  });

  it.each([['name.x'], ['*.a'], ['context'], ['inputs'], ['input..a']])('rejects path %s', (path) => {
    expect(typeof parseSelector(path)).toBe('string');
  });
});
