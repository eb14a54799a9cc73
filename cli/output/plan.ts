/**
 * A plan for people (text, `+ ~ -`), for a pull-request comment (markdown: summary table
 * first, details collapsed, under 60,000 characters) and for machines (JSON, stable shape).
 */
import type { Change, Conflict, KeptControl, Operation, Plan } from '../../src/gitops/plan.js';
import { hasChanges } from '../../src/gitops/plan.js';
import { promotionEffect, promotionLine, type Promotion } from '../../src/gitops/promotions.js';
import type { Refusal } from '../../src/gitops/refusal.js';
import { printableText, printableToolName } from '../../src/model/index.js';
import type { Colors } from './color.js';
import { colors as makeColors } from './color.js';

export const PLAN_JSON_VERSION = 1;
/** GitHub refuses comments above 65,536 characters; stay well below. */
export const MARKDOWN_LIMIT = 60_000;

export interface PlanContext {
  directory: string;
  server: string;
  fingerprint: string;
  /** Controls the plan moves from shadow to enforce, with the server's figures. */
  promotions?: readonly Promotion[];
  /** Why apply would refuse this plan (conflicts), with the commands that get past it. */
  refusal?: Refusal | null;
}

const plain = makeColors(false);

/** The one-line form of an operation, with its symbol. */
export function operationLine(o: Operation, c: Colors = plain): string {
  switch (o.op) {
    case 'create_control':
      return c.green(`+ create control "${o.name}" (${describeData(o.data)})`);
    case 'update_control':
      return c.yellow(`~ update control "${o.name}"`);
    case 'delete_control':
      // Whose control a prune deletes, and which file defined it: what a reviewer checks.
      return c.red(`- delete control "${o.name}"${o.managed_by === undefined ? '' : ` (${o.managed_by ?? 'no owner'}${o.source ? `, defined in ${o.source}` : ''})`}`);
    case 'create_agent':
      return c.green(`+ create agent "${o.agent_name}"`);
    case 'update_agent':
      return c.yellow(`~ update agent "${o.agent_name}"`);
    case 'link':
      return c.green(`+ link agent "${o.agent_name}" -> control "${o.control_name}"`);
    case 'unlink':
      return c.red(`- unlink agent "${o.agent_name}" -> control "${o.control_name}"`);
    case 'create_policy':
      return c.green(`+ ${o.name} -> ${reachText(o.reach)}`);
    case 'update_policy':
      return c.yellow(`~ ${o.name} -> ${reachText(o.reach)}`);
    case 'delete_policy':
      return c.red(`- ${o.name} (guarded ${-o.reach.new_agents} agents)`);
    case 'create_mcp_server':
      return c.green(`+ pin MCP server "${o.name}" (${o.server.tools.length} tool${o.server.tools.length === 1 ? '' : 's'})`);
    case 'update_mcp_server':
      return c.yellow(`~ update MCP server "${o.name}"`);
    case 'delete_mcp_server':
      return c.red(`- unpin MCP server "${o.name}"${o.source ? ` (defined in ${o.source})` : ''}`);
  }
}

/**
 * What changed in a pinned server: its fields, its instructions as a line diff, then each
 * tool added, removed or changed, a changed description as a line diff and title, schemas
 * and annotations as field diffs.
 */
function mcpServerLines(o: Extract<Operation, { op: 'update_mcp_server' }>, indent: string): string[] {
  const out = changeLines(o.changes.filter((ch) => ch.path !== 'tools' && ch.path !== 'instructions'), indent);
  const instructions = o.changes.find((ch) => ch.path === 'instructions');
  if (instructions) {
    const label = (value: unknown) => (value === undefined ? 'not pinned' : value === null ? 'none' : 'text');
    out.push(`${indent}instructions: ${label(instructions.before)} -> ${label(instructions.after)}`, ...(o.instructions ?? []).map((line) => `${indent}  ${line}`));
  }
  for (const tool of o.tools) {
    const mark = tool.status === 'added' ? '+' : tool.status === 'removed' ? '-' : '~';
    out.push(`${indent}${mark} tool "${printableToolName(tool.name)}" ${tool.status}`);
    if (tool.description) out.push(`${indent}    description:`, ...tool.description.map((line) => `${indent}      ${line}`));
    // Whole: a title or a schema's description is read by the model, and an instruction can start past any cut.
    if (tool.schema) out.push(...changeLines(tool.schema, `${indent}    `, Infinity));
  }
  // The server wrote these texts, and the model reads them whole: nothing in them may hide from the reviewer.
  return out.map(printableText);
}

/** `37 agents (3 new)`: whom a policy guards after the apply, and how many of them it does not guard today. */
function reachText(reach: { agents: number; new_agents: number }): string {
  return `${reach.agents} agent${reach.agents === 1 ? '' : 's'} (${reach.new_agents} new)`;
}

export function describeData(data: Extract<Operation, { op: 'create_control' }>['data']): string {
  const check = data.condition ? 'condition tree' : `${data.evaluator?.name ?? '?'} on ${data.selector?.path ?? '?'}`;
  return `${data.action.decision}, ${check}${data.enabled ? '' : ', disabled'}`;
}

/** `max`: the characters of each value shown (cut with `…`). */
export function changeLines(changes: readonly Change[], indent = '    ', max = 120): string[] {
  return changes.map((ch) => {
    if (!('before' in ch) || ch.before === undefined) return `${indent}${ch.path}: (unset) -> ${short(ch.after, max)}`;
    if (!('after' in ch) || ch.after === undefined) return `${indent}${ch.path}: ${short(ch.before, max)} -> (unset)`;
    return `${indent}${ch.path}: ${short(ch.before, max)} -> ${short(ch.after, max)}`;
  });
}

/**
 * The field diff of an update; a promotion's mode line says what the control would have
 * done while it ran in shadow mode.
 */
function updateLines(o: Extract<Operation, { op: 'update_control' | 'update_agent' }>, ctx: PlanContext, indent: string): string[] {
  const promotion = o.op === 'update_control' ? ctx.promotions?.find((p) => p.name === o.name) : undefined;
  if (!promotion) return changeLines(o.changes, indent);
  return o.changes.flatMap((ch) =>
    ch.path === 'mode' ? [`${indent}mode: shadow -> enforce (${promotionEffect(promotion)})`] : changeLines([ch], indent),
  );
}

function short(value: unknown, max = 120): string {
  // JSON spells control characters; format characters (bidi, zero-width, tags) it leaves as they are.
  const text = printableText(JSON.stringify(value) ?? 'null');
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function conflictLines(conflict: Conflict, c: Colors): string[] {
  const owner = conflict.managed_by === null ? 'made by hand' : `owned by ${conflict.managed_by}`;
  if (conflict.bound_by) {
    const policies = conflict.bound_by.map((p) => `"${p.policy}"`).join(', ');
    return [c.red(`! conflict: delete control "${conflict.name}": bound by ${conflict.bound_by.length === 1 ? 'policy' : 'policies'} ${policies}, which the plan keeps; the server refuses the delete`)];
  }
  if (conflict.op) {
    return [c.red(`! conflict: ${conflict.op} agent "${conflict.agent_name}" -> control "${conflict.name}": the control is ${owner}, whose links the server refuses to change; it is left alone`)];
  }
  return [
    c.red(`! conflict: control "${conflict.name}" exists on the server, ${owner}; it is left alone`),
    ...changeLines(conflict.changes),
  ];
}

export function summaryText(p: Plan): string {
  const s = p.summary;
  if (!hasChanges(p)) return 'No changes: the server matches the directory.';
  const parts = [
    `${s.create_control} to create`,
    `${s.update_control} to update`,
    `${s.delete_control} to delete`,
    `${s.create_agent + s.update_agent} agent change${s.create_agent + s.update_agent === 1 ? '' : 's'}`,
    `${s.link} to link`,
    `${s.unlink} to unlink`,
  ];
  const policies = s.create_policy + s.update_policy + s.delete_policy;
  if (policies > 0) parts.push(`${policies} polic${policies === 1 ? 'y' : 'ies'} to change`);
  const servers = s.create_mcp_server + s.update_mcp_server + s.delete_mcp_server;
  if (servers > 0) parts.push(`${servers} MCP server${servers === 1 ? '' : 's'} to change`);
  if (s.conflicts > 0) parts.push(`${s.conflicts} conflict${s.conflicts === 1 ? '' : 's'}`);
  return `Plan: ${parts.join(', ')}.`;
}

export function renderPlanText(p: Plan, ctx: PlanContext, c: Colors): string {
  const out = [c.dim(`guardctl plan: ${ctx.directory} -> ${ctx.server} (owner ${p.managed_by})`), ''];
  for (const o of p.operations) {
    out.push(`  ${operationLine(o, c)}`);
    if (o.op === 'update_control' || o.op === 'update_agent') out.push(...updateLines(o, ctx, '      '));
    if (o.op === 'update_policy') out.push(...changeLines(o.changes, '      '));
    if (o.op === 'update_mcp_server') out.push(...mcpServerLines(o, '      '));
  }
  for (const conflict of p.conflicts) out.push(...conflictLines(conflict, c).map((l) => `  ${l}`));
  for (const k of p.kept) out.push(`  ${keptLine(k, ctx.directory, c)}`);
  if (p.operations.length > 0 || p.conflicts.length > 0 || p.kept.length > 0) out.push('');
  out.push(c.bold(summaryText(p)));
  if (ctx.refusal) out.push('', c.red(`Apply would refuse this plan: ${ctx.refusal.message}.`), ...refusalGroupLines(ctx.refusal, c));
  return `${out.join('\n')}\n`;
}

/** The refusal for people: per owner, who the controls belong to and the command that takes them over. */
export function refusalGroupLines(refusal: Refusal, c: Colors = plain): string[] {
  const out: string[] = [];
  for (const group of refusal.groups) {
    out.push(`  ${group.names.map((n) => `"${n}"`).join(', ')} (${group.managed_by ?? 'no owner'}): ${group.why}.`);
    if (group.command) out.push(`    ${c.cyan(group.command)}`, `    ${c.dim(`(${group.advice})`)}`);
    else out.push(`    ${group.advice}.`);
  }
  return out;
}

/** A control --prune leaves alone because another directory of the same owner defines it. */
export function keptLine(k: KeptControl, directory: string, c: Colors = plain): string {
  return c.yellow(`= keep control "${k.name}" (${k.managed_by}, defined in ${k.source}): not in ${directory}, so --prune leaves it; delete it from the directory that defines it`);
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export function renderPlanJson(p: Plan, ctx: PlanContext): string {
  return `${JSON.stringify(
    {
      version: PLAN_JSON_VERSION,
      changes: hasChanges(p),
      directory: ctx.directory,
      server: ctx.server,
      fingerprint: ctx.fingerprint,
      managed_by: p.managed_by,
      summary: p.summary,
      operations: p.operations,
      conflicts: p.conflicts,
      kept: p.kept,
      refusal: ctx.refusal ?? null,
      promotions: ctx.promotions ?? [],
    },
    null,
    2,
  )}\n`;
}

export function renderPlanMarkdown(p: Plan, ctx: PlanContext, limit = MARKDOWN_LIMIT): string {
  const s = p.summary;
  const head = [
    '### guardctl plan',
    '',
    hasChanges(p) ? summaryText(p) : '**No changes**: the server matches the directory.',
    '',
    '| | create | update | delete | link | unlink | conflicts |',
    '|---|---:|---:|---:|---:|---:|---:|',
    `| controls | ${s.create_control} | ${s.update_control} | ${s.delete_control} | | | ${s.conflicts} |`,
    `| agents | ${s.create_agent} | ${s.update_agent} | | ${s.link} | ${s.unlink} | |`,
    ...(s.create_policy + s.update_policy + s.delete_policy > 0 ? [`| policies | ${s.create_policy} | ${s.update_policy} | ${s.delete_policy} | | | |`] : []),
    ...(s.create_mcp_server + s.update_mcp_server + s.delete_mcp_server > 0 ? [`| MCP servers | ${s.create_mcp_server} | ${s.update_mcp_server} | ${s.delete_mcp_server} | | | |`] : []),
    '',
    // Outside the collapsed details: turning a rule on is what a reviewer must see.
    ...promotionBlock(ctx.promotions ?? []),
  ];
  if (ctx.refusal) head.push(...refusalMarkdown(ctx.refusal), '');
  const tail = ['', `<sub>directory \`${ctx.directory}\`, owner \`${p.managed_by}\`, server state \`${ctx.fingerprint.slice(0, 19)}\`</sub>`, ''];
  if (!hasChanges(p)) return [...head, ...tail].join('\n');

  const detail: string[] = [];
  for (const o of p.operations) {
    detail.push(operationLine(o));
    if (o.op === 'update_control' || o.op === 'update_agent') detail.push(...updateLines(o, ctx, '    '));
    if (o.op === 'update_policy') detail.push(...changeLines(o.changes, '    '));
    if (o.op === 'update_mcp_server') detail.push(...mcpServerLines(o, '    '));
  }
  for (const conflict of p.conflicts) detail.push(...conflictLines(conflict, plain));
  for (const k of p.kept) detail.push(keptLine(k, ctx.directory));

  const open = `<details><summary>Details (${p.operations.length} operations${p.conflicts.length ? `, ${p.conflicts.length} conflicts` : ''})</summary>\n\n\`\`\`diff`;
  const close = '```\n\n</details>';
  const fixed = [...head, open, close, ...tail].join('\n').length + 200;
  const kept: string[] = [];
  let size = fixed;
  for (const line of detail) {
    // Fences inside a value would end the block early.
    const safe = line.replace(/```/g, "'''");
    if (size + safe.length + 1 > limit) break;
    kept.push(safe);
    size += safe.length + 1;
  }
  const body = [...head, open, ...kept, close];
  if (kept.length < detail.length) {
    body.push('', `> Truncated: ${detail.length - kept.length} of ${detail.length} lines left out to stay under ${limit} characters. Run \`guardctl plan\` for the full plan.`);
  }
  return [...body, ...tail].join('\n');
}

function promotionBlock(promotions: readonly Promotion[]): string[] {
  if (promotions.length === 0) return [];
  return [`**Shadow to enforce** (${promotions.length}):`, '', '```diff', ...promotions.map((p) => promotionLine(p).replace(/```/g, "'''")), '```', ''];
}

/** The refusal in a pull-request comment: a warning line, then each owner's command in a code block. */
function refusalMarkdown(refusal: Refusal): string[] {
  const out = [`> **Apply would refuse this plan**: ${refusal.message}.`];
  for (const group of refusal.groups) {
    out.push('>', `> ${group.names.map((n) => `\`${n.replace(/`/g, "'")}\``).join(', ')} (${group.managed_by ?? 'no owner'}): ${group.why}.`);
    if (group.command) out.push('>', '> ```sh', `> ${group.command}`, '> ```', `> ${capitalised(group.advice)}.`);
    else out.push(`> ${capitalised(group.advice)}.`);
  }
  return out;
}
