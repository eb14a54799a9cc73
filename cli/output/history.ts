/**
 * A control's or policy's history for people: each revision newest first, with what changed as field
 * diffs in plan's notation (`+ create`, `~ update`, `- delete`), and a stable JSON shape.
 */
import type { ChangeEntry, ControlData } from '../../src/model/index.js';
import { isPlainObject } from '../../src/gitops/canonical.js';
import { diffValues, type Change } from '../../src/gitops/plan.js';
import type { Colors } from './color.js';
import { colors as makeColors } from './color.js';
import { changeLines, describeData } from './plan.js';

export const HISTORY_JSON_VERSION = 1;
const plain = makeColors(false);

export interface HistoryContext {
  kind: 'control' | 'policy';
  id: number;
  /** The current name, or the last one its history knows when it is deleted. */
  name: string;
  server: string;
  /** More revisions exist beyond the ones shown. */
  more: boolean;
}

/** What one entry did, in plan's symbols, with its field diff below. */
export function entryLines(entry: ChangeEntry, c: Colors = plain): string[] {
  const before = entry.before ?? {};
  const after = entry.after ?? {};
  switch (entry.op) {
    case 'create': {
      if (entry.kind === 'policy') return [c.green(`+ create (binds ${countOf(after.controls, 'control')})`)];
      const data = after.data as ControlData | null | undefined;
      return [c.green(`+ create${data ? ` (${describeData(data)})` : ' (no data yet)'}`)];
    }
    case 'delete':
      return [c.red('- delete'), ...(entry.note ? [`    ${entry.note}`] : [])];
    case 'link':
      return [c.green(`+ link agent "${entry.agent_name ?? '?'}"`)];
    case 'unlink':
      return [c.red(`- unlink agent "${entry.agent_name ?? '?'}"`)];
    case 'update':
    case 'restore': {
      // An approval given back by a request that failed after taking it (docs/approvals.md).
      if (entry.kind === 'approval') return approvalLines(entry, after);
      const head = entry.op === 'restore' ? c.yellow(`~ restore${entry.note ? ` (${entry.note})` : ''}`) : c.yellow('~ update');
      const changes = entry.kind === 'control' ? controlChanges(before, after) : diffValues('', before, after);
      return [head, ...(changes.length === 0 ? ['    (no field changed)'] : changeLines(changes))];
    }
    case 'ask':
    case 'approve':
    case 'deny':
    case 'use':
    case 'expire':
      return approvalLines(entry, after);
  }
}

/** Approvals are in the audit log only; their entry says what happened to which one. */
function approvalLines(entry: ChangeEntry, after: Record<string, unknown>): string[] {
  return [`  ${entry.op} approval ${typeof after.id === 'string' ? after.id : '?'}${entry.note ? ` (${entry.note})` : ''}`];
}

function countOf(list: unknown, noun: string): string {
  if (!Array.isArray(list)) return `? ${noun}s`;
  return `${list.length} ${noun}${list.length === 1 ? '' : 's'}`;
}

/**
 * A control revision's changes with plan's paths: the data's fields by their own path
 * (`mode`, `action.decision`), the record's name, owner and file beside them. `enabled`
 * is in both the record and its data; it is shown once.
 */
function controlChanges(before: Record<string, unknown>, after: Record<string, unknown>): Change[] {
  const { data: dataBefore, ...recordBefore } = before;
  const { data: dataAfter, ...recordAfter } = after;
  const record = diffValues('', recordBefore, recordAfter);
  const bothData = isPlainObject(dataBefore) && isPlainObject(dataAfter);
  const data = bothData
    ? diffValues('', dataBefore, dataAfter).filter((ch) => ch.path !== 'enabled')
    : diffValues('data', dataBefore ?? null, dataAfter ?? null);
  return [...record, ...data];
}


export function renderHistoryText(entries: readonly ChangeEntry[], ctx: HistoryContext, c: Colors): string {
  const out = [c.dim(`History of ${ctx.kind} "${ctx.name}" (id ${ctx.id}) on ${ctx.server}, newest first`), ''];
  if (entries.length === 0) out.push('No revisions recorded.');
  for (const entry of entries) {
    out.push(c.bold(`r${entry.revision}  ${entry.timestamp}  ${entry.source}  ${entry.actor}`));
    out.push(...entryLines(entry, c).map((line) => `  ${line}`));
  }
  if (ctx.more) out.push('', c.dim('More revisions exist: raise --limit to see them.'));
  return `${out.join('\n')}\n`;
}

export function renderHistoryJson(entries: readonly ChangeEntry[], ctx: HistoryContext): string {
  const id = ctx.kind === 'policy' ? { policy_id: ctx.id } : { control_id: ctx.id };
  return `${JSON.stringify({ version: HISTORY_JSON_VERSION, ...id, name: ctx.name, server: ctx.server, more: ctx.more, entries }, null, 2)}\n`;
}
