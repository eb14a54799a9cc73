// Why apply would refuse a plan, and the command that adopts the controls: a table of conflicts.
import { describe, expect, it } from 'vitest';
import { refusalOf, shellWord } from '../../src/gitops/refusal.js';
import type { Conflict } from '../../src/gitops/plan.js';

const conflict = (name: string, managed_by: string | null): Conflict => ({ name, managed_by, changes: [] });

describe('refusalOf', () => {
  it('is null for a plan without conflicts', () => {
    expect(refusalOf({ conflicts: [], managed_by: 'gitops:default' }, { directory: 'controls', owner: 'default' })).toBeNull();
  });

  it('explains the owner trap (bootstrap as default, CI with --owner) and gives the exact adopt command', () => {
    const refusal = refusalOf(
      { conflicts: [conflict('a', 'gitops:default'), conflict('b', 'gitops:default')], managed_by: 'gitops:acme/guards' },
      { directory: 'controls', owner: 'acme/guards' },
    );
    expect(refusal?.message).toBe('2 controls of the same name exist on the server under another owner than gitops:acme/guards');
    expect(refusal?.groups).toEqual([
      {
        managed_by: 'gitops:default',
        names: ['a', 'b'],
        why: 'applied without --owner (owner "default"), for example by a first local guardctl apply; this plan runs with --owner acme/guards, as a CI workflow does with --owner $GITHUB_REPOSITORY',
        command: 'guardctl apply controls --owner acme/guards --adopt default',
        advice: 'makes them gitops:acme/guards, so this directory manages them from now on',
      },
    ]);
  });

  it('the trap the other way round, hand-made and watched controls, and the server when it was named', () => {
    const refusal = refusalOf(
      { conflicts: [conflict('a', 'gitops:acme/guards'), conflict('b', null), conflict('c', 'watch:/srv/controls')], managed_by: 'gitops:default' },
      { directory: 'my controls', owner: 'default', server: 'http://guard.internal:8000' },
    );
    expect(refusal?.groups.map((g) => [g.managed_by, g.command])).toEqual([
      ['gitops:acme/guards', "guardctl apply 'my controls' --server http://guard.internal:8000 --adopt acme/guards"],
      [null, "guardctl apply 'my controls' --server http://guard.internal:8000 --force"],
      ['watch:/srv/controls', null],
    ]);
    expect(refusal?.groups[0]?.why).toBe('applied with --owner acme/guards, as a CI workflow does with --owner $GITHUB_REPOSITORY; this plan runs without --owner (owner "default")');
    expect(refusal?.groups[2]?.advice).toBe('edit them in /srv/controls, or rename them in this directory');
  });

  it('quotes shell words only when needed', () => {
    expect(shellWord('acme/guards')).toBe('acme/guards');
    expect(shellWord("it's here")).toBe(`'it'\\''s here'`);
  });
  it('a delete of a control a kept policy binds: no flag gets past it, the advice is to unbind first', () => {
    const bound: Conflict = { name: 'gone', managed_by: 'gitops:default', changes: [], bound_by: [{ policy: 'by-hand', managed_by: null }, { policy: 'team', managed_by: 'gitops:team' }] };
    const refusal = refusalOf({ conflicts: [bound, conflict('b', null)], managed_by: 'gitops:default' }, { directory: 'controls', owner: 'default' });
    expect(refusal?.message).toBe(
      '1 control of the same name exists on the server under another owner than gitops:default; 1 control it would delete is bound by a policy it keeps, and the server refuses to delete a control a policy binds',
    );
    expect(refusal?.groups.at(-1)).toEqual({
      managed_by: 'gitops:default',
      names: ['gone'],
      why: 'bound by policies "by-hand" (made outside guardctl apply), "team" (owned by gitops:team)',
      command: null,
      advice: 'take "gone" out of the controls of those policies (or delete them) first, or keep the control in the directory',
    });
  });
});
