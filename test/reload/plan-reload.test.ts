import { describe, expect, it } from 'vitest';
import type { ActualControl, ActualState, DesiredState } from '../../src/gitops/desired-state.js';
import { ControlDataSchema } from '../../src/model/index.js';
import { isIgnoredPath, planReload, watchLabel } from '../../src/reload/index.js';

const OURS = watchLabel('/srv/controls');
const data = (pattern: string) =>
  ControlDataSchema.parse({ selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern } }, action: { decision: 'deny' } });

function have(name: string, managed_by: string | null, source: string | null = null, pattern = 'x'): ActualControl {
  return { control_id: name.length, name, enabled: true, data: data(pattern), managed_by, source };
}

describe('planReload (pure)', () => {
  it('deletes only the controls this watch owns that the directory no longer defines', () => {
    const desired: DesiredState = { controls: [], agents: [] };
    const actual: ActualState = {
      controls: [have('ours', OURS), have('by-hand', null), have('by-apply', 'gitops:hot-reload'), have('other-watch', watchLabel('/elsewhere'))],
      agents: [],
    };
    expect(planReload(desired, actual, OURS)).toEqual([{ op: 'delete_control', name: 'ours', managed_by: OURS, source: null }]);
  });

  it('takes over a control of the same name made by someone else (the directory is the truth)', () => {
    const desired: DesiredState = { controls: [{ name: 'c', data: data('x'), source: 'd/a.yaml:1' }], agents: [] };
    const actual: ActualState = { controls: [have('c', null, null)], agents: [] };
    const ops = planReload(desired, actual, OURS);
    expect(ops).toHaveLength(1);
    expect(ops[0]).toMatchObject({ op: 'update_control', name: 'c', source: 'd/a.yaml:1' });
    expect(ops[0]!.op === 'update_control' && ops[0].changes.map((c) => c.path)).toEqual(['managed_by']);
  });

  it('moves the source of a control whose document moved, without touching its data', () => {
    const desired: DesiredState = { controls: [{ name: 'c', data: data('x'), source: 'd/new.yaml:4' }], agents: [] };
    const actual: ActualState = { controls: [have('c', OURS, 'd/old.yaml:1')], agents: [] };
    const ops = planReload(desired, actual, OURS);
    expect(ops).toEqual([
      expect.objectContaining({ op: 'update_control', name: 'c', source: 'd/new.yaml:4', changes: [{ path: 'source', before: 'd/old.yaml:1', after: 'd/new.yaml:4' }] }),
    ]);
  });

  it('plans nothing when the store already matches', () => {
    const desired: DesiredState = { controls: [{ name: 'c', data: data('x'), source: 'd/a.yaml:1' }], agents: [{ agent_name: 'bot', fields: {}, controls: ['c'] }] };
    const actual: ActualState = {
      controls: [have('c', OURS, 'd/a.yaml:1')],
      agents: [{ agent_name: 'bot', agent_description: null, agent_version: null, steps: [], metadata: null, controls: ['c'] }],
    };
    expect(planReload(desired, actual, OURS)).toEqual([]);
  });

  it('unlinks watched controls from an agent the directory no longer lists, keeping its other links', () => {
    const desired: DesiredState = { controls: [{ name: 'c', data: data('x'), source: 'd/a.yaml:1' }], agents: [] };
    const actual: ActualState = {
      controls: [have('c', OURS, 'd/a.yaml:1'), have('manual', null)],
      agents: [{ agent_name: 'gone', agent_description: null, agent_version: null, steps: [], metadata: null, controls: ['c', 'manual'] }],
    };
    expect(planReload(desired, actual, OURS)).toEqual([{ op: 'unlink', agent_name: 'gone', control_name: 'c' }]);
  });
});

describe('isIgnoredPath', () => {
  const root = '/srv/controls';
  it.each([
    ['/srv/controls', undefined, false],
    ['/srv/controls/sql.yaml', true, false],
    ['/srv/controls/team/sql.yml', true, false],
    ['/srv/controls/team', false, false],
    ['/srv/controls/.sql.yaml.swp', true, true],
    ['/srv/controls/sql.yaml.swp', true, true],
    ['/srv/controls/sql.yaml~', true, true],
    ['/srv/controls/.#sql.yaml', true, true],
    ['/srv/controls/#sql.yaml#', true, true],
    ['/srv/controls/4913', undefined, true],
    ['/srv/controls/.git', false, true],
    ['/srv/controls/node_modules', false, true],
    ['/srv/controls/README.md', true, true],
  ])('%s (file: %s) ignored: %s', (path, isFile, ignored) => {
    expect(isIgnoredPath(root, path, isFile)).toBe(ignored);
  });

  it('plans the directory\'s policies: creates them, and deletes only this watch\'s policies the directory dropped', () => {
    const policy = (name: string, managed_by: string | null) => ({
      name,
      description: null,
      controls: ['c'],
      agents: { match_labels: { pci: 'true' } },
      source: 'd/p.yaml:1',
      managed_by,
    });
    const desired: DesiredState = {
      controls: [{ name: 'c', data: data('x'), source: 'd/a.yaml:1' }],
      agents: [],
      policies: [{ name: 'new', description: null, controls: ['c'], agents: { match_labels: { pci: 'true' } }, source: 'd/p.yaml:1' }],
    };
    const actual: ActualState = { controls: [have('c', OURS, 'd/a.yaml:1')], agents: [], policies: [policy('dropped', OURS), policy('by-hand', null)] };
    const ops = planReload(desired, actual, OURS);
    expect(ops.map((o) => [o.op, 'name' in o ? o.name : ''])).toEqual([
      ['create_policy', 'new'],
      ['delete_policy', 'dropped'],
    ]);
  });
});
