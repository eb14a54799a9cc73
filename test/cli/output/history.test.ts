import { describe, expect, it } from 'vitest';
import { colors } from '../../../cli/output/color.js';
import { entryLines, renderHistoryJson, renderHistoryText } from '../../../cli/output/history.js';
import type { ChangeEntry } from '../../../src/model/index.js';

const data = (over: Record<string, unknown> = {}) => ({
  enabled: true,
  execution: 'server',
  scope: {},
  selector: { path: 'input' },
  evaluator: { name: 'regex', config: { pattern: 'x' } },
  action: { decision: 'deny' },
  ...over,
});
const record = (over: Record<string, unknown> = {}) => ({ name: 'c', enabled: true, data: data(), managed_by: null, source: null, ...over });

function entry(over: Partial<ChangeEntry>): ChangeEntry {
  return {
    id: 1, revision: 5, timestamp: '2026-01-01T00:00:00.000Z', actor: 'admin:3f9a1c2b', source: 'api', kind: 'control', op: 'update',
    control_id: 3, control_name: 'c', agent_name: null, before: record(), after: record(), note: null, ...over,
  };
}

describe('history output', () => {
  it('shows a control update as plan does: data fields by their own path, enabled once', () => {
    const lines = entryLines(entry({ before: record(), after: record({ enabled: false, data: data({ enabled: false, mode: 'shadow' }), name: 'c2' }) }));
    expect(lines).toEqual(['~ update', '    enabled: true -> false', '    name: "c" -> "c2"', '    mode: (unset) -> "shadow"']);
  });

  it('shows an approval given back (restore) as the other approval entries: which one, and why', () => {
    const approval = { id: 'apr_3f9a1c2b8e4d5f60718293a4', status: 'approved', stage: 'pre', step_name: 'pay' };
    const note = 'unused again: the request that used it failed';
    expect(entryLines(entry({ kind: 'approval', op: 'restore', control_id: null, before: null, after: approval, note }))).toEqual([`  restore approval apr_3f9a1c2b8e4d5f60718293a4 (${note})`]);
    expect(entryLines(entry({ kind: 'approval', op: 'use', control_id: null, before: null, after: approval }))).toEqual(['  use approval apr_3f9a1c2b8e4d5f60718293a4']);
  });

  it('names restores with their revision, deletes with what they unlinked, links and agent changes', () => {
    expect(entryLines(entry({ op: 'restore', note: 'restored revision 2', after: record({ data: data({ description: 'old' }) }) }))).toEqual([
      '~ restore (restored revision 2)',
      '    description: (unset) -> "old"',
    ]);
    expect(entryLines(entry({ op: 'delete', after: null, note: 'unlinked from bot' }))).toEqual(['- delete', '    unlinked from bot']);
    expect(entryLines(entry({ kind: 'link', op: 'unlink', agent_name: 'bot' }))).toEqual(['- unlink agent "bot"']);
    expect(entryLines(entry({ op: 'create', before: null, after: record({ data: null }) }))).toEqual(['+ create (no data yet)']);
    expect(entryLines(entry({ op: 'update', after: record({ data: null }) }))[1]).toMatch(/^ {4}data: \{"enabled":true,.*… -> null$/);
    expect(entryLines(entry({ op: 'update', before: record(), after: record() }))).toEqual(['~ update', '    (no field changed)']);
  });

  it('renders newest first with revision, time, source and actor, and a stable JSON shape', () => {
    const ctx = { kind: 'control' as const, id: 3, name: 'c', server: 'http://s', more: true };
    const text = renderHistoryText([entry({ revision: 9 }), entry({ revision: 4, op: 'create', before: null })], ctx, colors(false));
    expect(text.split('\n')).toEqual([
      'History of control "c" (id 3) on http://s, newest first',
      '',
      'r9  2026-01-01T00:00:00.000Z  api  admin:3f9a1c2b',
      '  ~ update',
      '      (no field changed)',
      'r4  2026-01-01T00:00:00.000Z  api  admin:3f9a1c2b',
      '  + create (deny, regex on input)',
      '',
      'More revisions exist: raise --limit to see them.',
      '',
    ]);
    expect(Object.keys(JSON.parse(renderHistoryJson([entry({})], ctx)))).toEqual(['version', 'control_id', 'name', 'server', 'more', 'entries']);
  });
});
