import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';
import type { Scope, Stage, Step } from '../../src/model/index.js';
import { control } from './helpers.js';

const registry = createDefaultRegistry();

/** A control that matches any input holding "x", limited by `scope`. */
function scoped(scope: Scope | undefined) {
  return control('scoped', {
    ...(scope === undefined ? {} : { scope }),
    selector: { path: 'input' },
    evaluator: { name: 'regex', config: { pattern: 'x' } },
    action: { decision: 'deny' },
  });
}

const step = (type: Step['type'], name: string): Step => ({ type, name, input: 'x' });

type Case = [label: string, scope: Scope | undefined, type: Step['type'], name: string, stage: Stage, applies: boolean];

const cases: Case[] = [
  ['no scope: every step', undefined, 'llm', 'anything', 'post', true],
  ['empty scope object: every step', {}, 'tool', 'anything', 'pre', true],
  ['step_types tool, tool step', { step_types: ['tool'] }, 'tool', 'a', 'pre', true],
  ['step_types tool, llm step', { step_types: ['tool'] }, 'llm', 'a', 'pre', false],
  ['step_types null means all', { step_types: null }, 'llm', 'a', 'pre', true],
  ['stages pre at pre', { stages: ['pre'] }, 'tool', 'a', 'pre', true],
  ['stages pre at post', { stages: ['pre'] }, 'tool', 'a', 'post', false],
  ['stages both at post', { stages: ['pre', 'post'] }, 'tool', 'a', 'post', true],
  ['step_names hit', { step_names: ['run_sql', 'x'] }, 'tool', 'run_sql', 'pre', true],
  ['step_names miss', { step_names: ['run_sql'] }, 'tool', 'run_sq', 'pre', false],
  ['step_names are exact (case)', { step_names: ['run_sql'] }, 'tool', 'RUN_SQL', 'pre', false],
  ['step_name_regex hit', { step_name_regex: '^db_' }, 'tool', 'db_query', 'pre', true],
  ['step_name_regex miss', { step_name_regex: '^db_' }, 'tool', 'query_db', 'pre', false],
  ['step_name_regex (?i)', { step_name_regex: '(?i)^db_' }, 'tool', 'DB_query', 'pre', true],
  ['names OR regex: name hits', { step_names: ['send'], step_name_regex: '^db_' }, 'tool', 'send', 'pre', true],
  ['names OR regex: regex hits', { step_names: ['send'], step_name_regex: '^db_' }, 'tool', 'db_x', 'pre', true],
  ['names OR regex: neither', { step_names: ['send'], step_name_regex: '^db_' }, 'tool', 'other', 'pre', false],
  ['all fields AND: all hold', { step_types: ['tool'], stages: ['pre'], step_names: ['send'] }, 'tool', 'send', 'pre', true],
  ['all fields AND: type fails', { step_types: ['tool'], stages: ['pre'], step_names: ['send'] }, 'llm', 'send', 'pre', false],
  ['all fields AND: stage fails', { step_types: ['tool'], stages: ['pre'], step_names: ['send'] }, 'tool', 'send', 'post', false],
  ['all fields AND: name fails', { step_types: ['tool'], stages: ['pre'], step_names: ['send'] }, 'tool', 'recv', 'pre', false],
  ['resource step: scoped to resources', { step_types: ['resource'], step_names: ['db://schema'] }, 'resource', 'db://schema', 'post', true],
  ['resource step: a tool control of the same name', { step_types: ['tool'], step_names: ['db://schema'] }, 'resource', 'db://schema', 'pre', false],
  ['prompt step: scoped to prompts', { step_types: ['prompt', 'resource'] }, 'prompt', 'summarise', 'pre', true],
  ['prompt step: not a resource control', { step_types: ['resource'] }, 'prompt', 'summarise', 'pre', false],
  ['prompt step: unscoped controls apply to every type', undefined, 'prompt', 'summarise', 'pre', true],
];

describe('scope', () => {
  it.each(cases)('%s', async (_label, scope, type, name, stage, applies) => {
    const set = compileControls([scoped(scope)], registry);
    const { result } = await evaluateStep(set, step(type, name), stage);
    const evaluated = result.matches.length + result.non_matches.length + result.errors.length;
    expect(evaluated).toBe(applies ? 1 : 0);
    expect(result.decision).toBe(applies ? 'deny' : 'allow');
  });

  it('indexes controls by stage and step type', () => {
    const set = compileControls(
      [
        scoped({ step_types: ['tool'], stages: ['pre'] }),
        scoped({ step_types: ['llm'] }),
        scoped(undefined),
      ],
      registry,
    );
    expect(set.index.pre.tool).toHaveLength(2);
    expect(set.index.post.tool).toHaveLength(1);
    expect(set.index.pre.llm).toHaveLength(2);
    expect(set.index.post.llm).toHaveLength(2);
    expect(set.index.pre.resource).toHaveLength(1);
    expect(set.index.post.prompt).toHaveLength(1);
  });

  it('the execution option keeps only controls of that execution', async () => {
    const sdk = control('sdk-only', {
      execution: 'sdk',
      selector: { path: 'input' },
      evaluator: { name: 'regex', config: { pattern: 'x' } },
      action: { decision: 'deny' },
    });
    const set = compileControls([sdk], registry);
    expect((await evaluateStep(set, step('tool', 'a'), 'pre', { execution: 'server' })).result.decision).toBe('allow');
    expect((await evaluateStep(set, step('tool', 'a'), 'pre', { execution: 'sdk' })).result.decision).toBe('deny');
    expect((await evaluateStep(set, step('tool', 'a'), 'pre')).result.decision).toBe('deny');
  });
});
