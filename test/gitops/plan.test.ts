// The plan as data: tables of (desired, actual, options) -> operations and conflicts.
import { describe, expect, it } from 'vitest';
import { ControlDataSchema, type ControlData } from '../../src/model/index.js';
import type { ActualControl, ActualState, DesiredPolicy, DesiredState } from '../../src/gitops/desired-state.js';
import { hasChanges, plan, type PlanOptions } from '../../src/gitops/plan.js';

const data = (pattern: string, extra: Record<string, unknown> = {}): ControlData =>
  ControlDataSchema.parse({ selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern } }, action: { decision: 'deny' }, ...extra });

const OWNER = 'gitops:default';
let nextId = 1;
const actualControl = (name: string, d: ControlData | null, managed_by: string | null = OWNER): ActualControl => ({
  control_id: nextId++, name, enabled: d?.enabled ?? true, data: d, managed_by, source: null,
});
const agent = (agent_name: string, controls: string[], extra: Partial<ActualState['agents'][number]> = {}) => ({
  agent_name, agent_description: null, agent_version: null, steps: [], metadata: null, controls, ...extra,
});

interface Case {
  name: string;
  desired: DesiredState;
  actual: ActualState;
  options?: PlanOptions;
  ops: string[];
  conflicts?: string[];
}

/** Operations as short strings, in plan order, so the tables read like the CLI output. */
const brief = (p: ReturnType<typeof plan>) =>
  p.operations.map((o) => {
    switch (o.op) {
      case 'create_control':
      case 'delete_control':
        return `${o.op} ${o.name}`;
      case 'update_control':
        return `${o.op} ${o.name} ${o.changes.map((c) => c.path).join(',')}`;
      case 'create_agent':
        return `${o.op} ${o.agent_name}`;
      case 'update_agent':
        return `${o.op} ${o.agent_name} ${o.changes.map((c) => c.path).join(',')}`;
      case 'link':
      case 'unlink':
        return `${o.op} ${o.agent_name} ${o.control_name}`;
      case 'create_policy':
      case 'delete_policy':
        return `${o.op} ${o.name} -> ${o.reach.agents} (${o.reach.new_agents} new)`;
      case 'update_policy':
        return `${o.op} ${o.name} ${o.changes.map((c) => c.path).join(',')} -> ${o.reach.agents} (${o.reach.new_agents} new)`;
      case 'create_mcp_server':
      case 'update_mcp_server':
      case 'delete_mcp_server':
        return `${o.op} ${o.name}`;
    }
  });

const policy = (name: string, controls: string[], agents: DesiredPolicy['agents']): DesiredPolicy => ({ name, description: null, controls, agents, source: null });

const empty: ActualState = { controls: [], agents: [] };

const cases: Case[] = [
  {
    name: 'create into an empty server: controls, then the agent, then links',
    desired: { controls: [{ name: 'b', data: data('b'), source: 'x.yaml:1' }, { name: 'a', data: data('a'), source: null }], agents: [{ agent_name: 'bot', fields: {}, controls: ['a', 'b'] }] },
    actual: empty,
    ops: ['create_control a', 'create_control b', 'create_agent bot', 'link bot a', 'link bot b'],
  },
  {
    name: 'no-op when everything matches',
    desired: { controls: [{ name: 'a', data: data('a'), source: null }], agents: [{ agent_name: 'bot', fields: { agent_description: 'd' }, controls: ['a'] }] },
    actual: { controls: [actualControl('a', data('a'))], agents: [agent('bot', ['a'], { agent_description: 'd' })] },
    ops: [],
  },
  {
    name: 'field-level update of data',
    desired: { controls: [{ name: 'a', data: data('new', { description: 'why' }), source: null }], agents: [] },
    actual: { controls: [actualControl('a', data('old'))], agents: [] },
    ops: ['update_control a description,evaluator.config.pattern'],
  },
  {
    name: 'the record enabled flag drifted from the data',
    desired: { controls: [{ name: 'a', data: data('a'), source: null }], agents: [] },
    actual: { controls: [{ ...actualControl('a', data('a')), enabled: false }], agents: [] },
    ops: ['update_control a enabled'],
  },
  {
    name: 'a control without data gets its data',
    desired: { controls: [{ name: 'a', data: data('a'), source: null }], agents: [] },
    actual: { controls: [actualControl('a', null)], agents: [] },
    ops: ['update_control a data'],
  },
  {
    name: 'link and unlink for a declared agent (links first: never fewer guards than both states); undeclared agents are left alone',
    desired: { controls: [{ name: 'a', data: data('a'), source: null }, { name: 'b', data: data('b'), source: null }], agents: [{ agent_name: 'bot', fields: {}, controls: ['b'] }] },
    actual: { controls: [actualControl('a', data('a')), actualControl('b', data('b'))], agents: [agent('bot', ['a']), agent('other', ['a'])] },
    ops: ['link bot b', 'unlink bot a'],
  },
  {
    name: 'without prune an owned control the directory dropped stays',
    desired: { controls: [], agents: [] },
    actual: { controls: [actualControl('gone', data('g'))], agents: [] },
    ops: [],
  },
  {
    name: 'prune deletes only controls this owner manages',
    desired: { controls: [], agents: [] },
    actual: { controls: [actualControl('mine', data('m')), actualControl('by-hand', data('h'), null), actualControl('theirs', data('t'), 'gitops:other')], agents: [] },
    options: { prune: true },
    ops: ['delete_control mine'],
  },
  {
    name: 'prune after unlinking: unlinks come before deletes',
    desired: { controls: [], agents: [{ agent_name: 'bot', fields: {}, controls: [] }] },
    actual: { controls: [actualControl('old', data('o'))], agents: [agent('bot', ['old'])] },
    options: { prune: true },
    ops: ['unlink bot old', 'delete_control old'],
  },
  {
    name: 'a hand-made control of the same name that differs is a conflict',
    desired: { controls: [{ name: 'a', data: data('new'), source: null }], agents: [] },
    actual: { controls: [actualControl('a', data('old'), null)], agents: [] },
    ops: [],
    conflicts: ['a'],
  },
  {
    name: 'a hand-made control that already matches needs nothing',
    desired: { controls: [{ name: 'a', data: data('same'), source: null }], agents: [] },
    actual: { controls: [actualControl('a', data('same'), null)], agents: [] },
    ops: [],
  },
  {
    name: 'force takes over a conflicting control',
    desired: { controls: [{ name: 'a', data: data('new'), source: null }], agents: [] },
    actual: { controls: [actualControl('a', data('old'), 'gitops:other')], agents: [] },
    options: { force: true },
    ops: ['update_control a evaluator.config.pattern,managed_by'],
  },
  {
    name: 'force does not take a control a watched directory keeps (the server refuses every write to it)',
    desired: { controls: [{ name: 'a', data: data('new'), source: null }], agents: [] },
    actual: { controls: [actualControl('a', data('old'), 'watch:controls')], agents: [] },
    options: { force: true },
    ops: [],
    conflicts: ['a'],
  },
  {
    name: 'another owner id is a different owner',
    desired: { controls: [{ name: 'a', data: data('new'), source: null }], agents: [] },
    actual: { controls: [actualControl('a', data('old'), 'gitops:default')], agents: [] },
    options: { owner: 'team-b' },
    ops: [],
    conflicts: ['a'],
  },
  {
    name: 'adopt takes over the controls of the named owner only, identical ones included',
    desired: {
      controls: [
        { name: 'a', data: data('new'), source: null },
        { name: 'b', data: data('same'), source: null },
        { name: 'c', data: data('new'), source: null },
        { name: 'd', data: data('new'), source: null },
      ],
      agents: [],
    },
    actual: {
      controls: [
        actualControl('a', data('old'), 'gitops:default'),
        actualControl('b', data('same'), 'gitops:default'),
        actualControl('c', data('old'), null),
        actualControl('d', data('old'), 'gitops:someone-else'),
      ],
      agents: [],
    },
    options: { owner: 'acme/guards', adopt: ['default'] },
    ops: ['update_control a evaluator.config.pattern,managed_by', 'update_control b managed_by'],
    conflicts: ['c', 'd'],
  },
  {
    name: 'agent fields the directory sets are compared; the ones it leaves out are not',
    desired: { controls: [], agents: [{ agent_name: 'bot', fields: { agent_version: '2' }, controls: [] }] },
    actual: { controls: [], agents: [agent('bot', [], { agent_version: '1', agent_description: 'kept' })] },
    ops: ['update_agent bot agent_version'],
  },
  {
    name: 'a policy reaches the server agents its labels select, plus the new ones, counting those it does not guard yet',
    desired: {
      controls: [{ name: 'a', data: data('a'), source: null }],
      agents: [{ agent_name: 'new-bot', fields: { labels: { pci: 'true' } }, controls: [] }, { agent_name: 'relabelled', fields: { labels: { pci: 'true' } }, controls: [] }],
      policies: [policy('pci', ['a'], { match_labels: { pci: 'true' } })],
    },
    actual: {
      controls: [actualControl('a', data('a'))],
      agents: [agent('old-1', [], { labels: { pci: 'true' } }), agent('old-2', [], { labels: { pci: 'false' } }), agent('relabelled', [], { labels: {} })],
      policies: [],
    },
    ops: ['create_agent new-bot', 'update_agent relabelled labels', 'create_policy pci -> 3 (3 new)'],
  },
  {
    name: 'a policy changed and one pruned; an unchanged one is no operation',
    desired: {
      controls: [{ name: 'a', data: data('a'), source: null }],
      agents: [],
      policies: [policy('same', ['a'], { names: ['x'] }), policy('wider', ['a'], { match_labels: {} })],
    },
    actual: {
      controls: [actualControl('a', data('a'))],
      agents: [agent('x', []), agent('y', [])],
      policies: [
        { ...policy('same', ['a'], { names: ['x'] }), managed_by: OWNER },
        { ...policy('wider', ['a'], { names: ['x'] }), managed_by: OWNER },
        { ...policy('gone', ['a'], { names: ['y'] }), managed_by: OWNER },
      ],
    },
    options: { prune: true },
    ops: ['update_policy wider agents -> 2 (1 new)', 'delete_policy gone -> 0 (-1 new)'],
  },
  {
    name: 'a policy of another owner is a conflict',
    desired: { controls: [], agents: [], policies: [policy('p', ['a'], { names: ['x'] })] },
    actual: { controls: [], agents: [], policies: [{ ...policy('p', ['b'], { names: ['x'] }), managed_by: null }] },
    ops: [],
    conflicts: ['p'],
  },
  {
    name: 'deleting a control that a policy the plan keeps binds is a conflict up front (the delete stays: the server refuses it)',
    desired: { controls: [{ name: 'kept', data: data('k'), source: null }], agents: [], policies: [] },
    actual: {
      controls: [actualControl('kept', data('k')), actualControl('gone', data('g'))],
      agents: [],
      policies: [{ ...policy('by-hand', ['gone'], { names: ['x'] }), managed_by: null }],
    },
    options: { prune: true },
    ops: ['delete_control gone'],
    conflicts: ['gone'],
  },
  {
    name: 'deleting a control with the policy that binds it, or after taking it out of the policy, is no conflict',
    desired: { controls: [{ name: 'kept', data: data('k'), source: null }], agents: [], policies: [policy('edited', ['kept'], { names: ['x'] })] },
    actual: {
      controls: [actualControl('kept', data('k')), actualControl('gone', data('g'))],
      agents: [],
      policies: [
        { ...policy('edited', ['kept', 'gone'], { names: ['x'] }), managed_by: OWNER },
        { ...policy('pruned', ['gone'], { names: ['x'] }), managed_by: OWNER },
      ],
    },
    options: { prune: true },
    ops: ['update_policy edited controls -> 0 (0 new)', 'delete_policy pruned -> 0 (0 new)', 'delete_control gone'],
  },
];

describe('plan', () => {
  it.each(cases)('$name', (c) => {
    const p = plan(c.desired, c.actual, c.options);
    expect(brief(p)).toEqual(c.ops);
    expect(p.conflicts.map((x) => x.name)).toEqual(c.conflicts ?? []);
    expect(hasChanges(p)).toBe(c.ops.length > 0 || (c.conflicts ?? []).length > 0);
    expect(p.summary.total).toBe(c.ops.length);
  });

  it('is deterministic whatever order the inputs come in', () => {
    const c = cases[0]!;
    const reversed = { controls: [...c.desired.controls].reverse(), agents: c.desired.agents };
    expect(plan(reversed, c.actual)).toEqual(plan(c.desired, c.actual));
  });

  it('marks created and updated controls with the owner label and the source', () => {
    const p = plan({ controls: [{ name: 'a', data: data('a'), source: 'c/a.yaml:3' }], agents: [] }, empty, { owner: 'ci' });
    expect(p.managed_by).toBe('gitops:ci');
    expect(p.operations[0]).toMatchObject({ op: 'create_control', managed_by: 'gitops:ci', source: 'c/a.yaml:3' });
  });

  it('records before and after of each changed field', () => {
    const p = plan(
      { controls: [{ name: 'a', data: data('new', { scope: { stages: ['pre'] } }), source: null }], agents: [] },
      { controls: [actualControl('a', data('old'))], agents: [] },
    );
    const op = p.operations[0]!;
    expect(op.op === 'update_control' && op.changes).toEqual([
      { path: 'evaluator.config.pattern', before: 'old', after: 'new' },
      { path: 'scope.stages', after: ['pre'] },
    ]);
  });
});

describe('prune and the directory that defines a control', () => {
  const at = (name: string, source: string | null, managed_by: string | null = OWNER): ActualControl => ({ ...actualControl(name, data(name), managed_by), source });

  it('deletes only controls this owner made from this directory; names the owner and file of each deletion, and what it keeps', () => {
    const actual = { controls: [at('mine', 'controls/a.yaml:1'), at('nested', 'controls/sub/b.yaml:4'), at('theirs', 'team-b/controls/c.yaml:1'), at('prefix', 'controls-old/d.yaml:1'), at('unknown', null)], agents: [] };
    const p = plan({ controls: [], agents: [] }, actual, { prune: true, directory: './controls/' });
    expect(p.operations).toEqual([
      { op: 'delete_control', name: 'mine', managed_by: OWNER, source: 'controls/a.yaml:1' },
      { op: 'delete_control', name: 'nested', managed_by: OWNER, source: 'controls/sub/b.yaml:4' },
      { op: 'delete_control', name: 'unknown', managed_by: OWNER, source: null },
    ]);
    expect(p.kept.map((k) => [k.name, k.source])).toEqual([['prefix', 'controls-old/d.yaml:1'], ['theirs', 'team-b/controls/c.yaml:1']]);
  });

  it('without a directory (hot reload plans its own), every control of the owner may be pruned', () => {
    const p = plan({ controls: [], agents: [] }, { controls: [at('theirs', 'elsewhere/c.yaml:1')], agents: [] }, { prune: true });
    expect(p.operations.map((o) => o.op)).toEqual(['delete_control']);
    expect(p.kept).toEqual([]);
  });
});
