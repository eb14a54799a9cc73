import type { Command } from 'commander';
import type { GuardClient } from '../../src/client/index.js';
import { UserError } from '../../src/errors.js';
import type { ChangeEntry, ControlSnapshot } from '../../src/model/index.js';
import { withExamples } from '../help.js';
import { addConnectionOptions, clientOf, connectionOf, formatOption, withServer, type ConnectionFlags } from '../options.js';
import { colors, shouldColor } from '../output/color.js';
import { renderHistoryJson, renderHistoryText, type HistoryContext } from '../output/history.js';

export interface HistoryOptions extends ConnectionFlags {
  format: 'text' | 'json';
  limit: string;
  /** The argument names a policy, not a control. */
  policy?: boolean;
}

/** One page of a history, whichever kind it is of. */
type PageReader = (id: number, page: { cursor: number | null; limit: number }) => Promise<{ entries: ChangeEntry[]; pagination: { next_cursor: number | null; has_more: boolean } }>;

/** Entries per request: the server's maximum page. */
const PAGE = 100;

export function registerHistory(program: Command): void {
  const command = program
    .command('history')
    .description('A control\'s or policy\'s revisions, newest first, as field diffs: who changed what, when, and through what')
    .argument('<control>', 'the control\'s name, or its id (a deleted control is found by id); with --policy, a policy\'s')
    .option('--policy', 'the argument names a policy')
    .addOption(formatOption(['text', 'json']))
    .option('--limit <n>', 'revisions to show at most', '20');
  addConnectionOptions(command).action(async (control: string, options: HistoryOptions) => {
    process.exitCode = await runHistory(control, options);
  });
  withExamples(command, [
    ["a control's last 20 revisions: who changed what, when, through the API, apply or watch mode", 'guardctl history block-destructive-sql'],
    ['a deleted control, by its id, all of its revisions', 'guardctl history 12 --limit 1000'],
    ["a policy's revisions: the controls it binds and the agents it selects", 'guardctl history --policy pci-baseline'],
  ]);
}

export function parseLimit(text: string): number {
  if (!/^\d{1,6}$/.test(text.trim()) || Number(text) < 1) throw new UserError(`--limit "${text}" is not a whole number above 0`, 'for example --limit 50');
  return Number(text);
}

export async function runHistory(control: string, options: HistoryOptions): Promise<number> {
  const limit = parseLimit(options.limit);
  const connection = connectionOf(options);
  const client = clientOf(connection);
  const kind: HistoryContext['kind'] = options.policy === true ? 'policy' : 'control';
  const { id, name, entries, more } = await withServer(connection, async () => {
    const found = kind === 'policy' ? await policyIdOf(client, control) : await controlIdOf(client, control);
    const read: PageReader = kind === 'policy' ? (at, page) => client.policies.history(at, page) : (at, page) => client.controlHistory(at, page);
    const got: ChangeEntry[] = [];
    let cursor: number | null = null;
    let hasMore = false;
    do {
      const page = await read(found.id, { cursor, limit: Math.min(PAGE, limit - got.length) });
      got.push(...page.entries);
      cursor = page.pagination.next_cursor;
      hasMore = page.pagination.has_more;
    } while (hasMore && got.length < limit);
    return { id: found.id, name: found.name ?? lastName(got) ?? `#${found.id}`, entries: got, more: hasMore };
  });
  const ctx = { kind, id, name, server: connection.serverUrl, more };
  process.stdout.write(options.format === 'json' ? renderHistoryJson(entries, ctx) : renderHistoryText(entries, ctx, colors(shouldColor(process.stdout))));
  return 0;
}

/** A control by name; a name that is no control's but is a number is taken as an id (deleted controls). */
async function controlIdOf(client: GuardClient, control: string): Promise<{ id: number; name: string | null }> {
  const byName = await client.listControls({ name: control, limit: 1 });
  const match = byName.controls[0];
  if (match) return { id: match.control_id, name: match.name };
  if (/^\d{1,15}$/.test(control)) return { id: Number(control), name: null };
  throw new UserError(
    `no control is named "${control}"`,
    'a deleted control\'s history is read by its id: guardctl history <id> (the audit log, GET /api/v1/audit, names deleted controls and their ids)',
  );
}

/** A policy by name; a number that is no policy's name is taken as an id (deleted policies). */
async function policyIdOf(client: GuardClient, policy: string): Promise<{ id: number; name: string | null }> {
  const byName = await client.policies.list({ name: policy, limit: 1 });
  const match = byName.policies[0];
  if (match) return { id: match.policy_id, name: match.name };
  if (/^\d{1,15}$/.test(policy)) return { id: Number(policy), name: null };
  throw new UserError(
    `no policy is named "${policy}"`,
    'a deleted policy\'s history is read by its id: guardctl history --policy <id> (the audit log, GET /api/v1/audit, names deleted policies and their ids)',
  );
}

/** The name a deleted control or policy last had, from its newest entry that says. */
function lastName(entries: readonly ChangeEntry[]): string | null {
  for (const e of entries) {
    const snap = (e.after ?? e.before) as Partial<ControlSnapshot> | null;
    if (typeof snap?.name === 'string') return snap.name;
    if (e.control_name) return e.control_name;
  }
  return null;
}
