/**
 * PURE: `kind: McpServer` documents: schema (at file:line:col), a pinned fingerprint that
 * disagrees with the pinned fields (someone edited a description without re-pinning), a
 * tool pinned twice, and the cross-file rules: a server defined twice is an error, and so is
 * a tool name that two servers both let the model see. Agents reach MCP servers through
 * gateways the directory does not describe, so any two servers may end up in front of one
 * agent; a name both expose would be ambiguous to the model and to controls that scope
 * `tool_names`. Hiding it in one of them (deny_tools / allow_tools) resolves it.
 * allow/deny naming a tool that is not pinned is a warning (it hides nothing today), and so
 * is a pin of an earlier guardctl (`sha256:` fingerprints, no `instructions`): it keeps
 * working, but titles, output schemas and instructions change unchecked until a re-pin.
 * Pinned text holding code points a reader cannot see is a warning too (`hidden_text`).
 */
import type { z } from 'zod';
import { McpServerDocumentSchema, fieldIssuesOf, formatPath, looseName, printableText, printableToolName, textIssuesOf, toolPermitted, type FieldIssue, type McpServerDocument } from '../model/index.js';
import { FINGERPRINTED_FIELDS, fingerprintMismatches, fingerprintVersionOf } from './canonical.js';
import type { Diagnostic } from './diagnostics.js';
import { diag, startOf, where, type DocContext, type SourceLocation } from './load-context.js';

export interface LoadedMcpServer {
  name: string;
  document: McpServerDocument;
  source: SourceLocation;
}

export interface McpServerSeen {
  ctx: DocContext;
  server: LoadedMcpServer;
}

type IssueReporter = (ctx: DocContext, issue: FieldIssue, schema: z.ZodType, evaluators: readonly string[]) => Diagnostic;

export function loadMcpServer(ctx: DocContext, value: Record<string, unknown>, out: Diagnostic[], report: IssueReporter): McpServerSeen | null {
  const text = textIssuesOf(value);
  for (const issue of text) out.push(report(ctx, issue, McpServerDocumentSchema, []));
  if (text.length > 0) return null;
  const parsed = McpServerDocumentSchema.safeParse(value);
  if (!parsed.success) {
    for (const issue of fieldIssuesOf(parsed.error)) out.push(report(ctx, issue, McpServerDocumentSchema, []));
    return null;
  }
  const document = parsed.data;
  const before = out.length;
  const firstIndex = new Map<string, number>();
  document.tools.forEach((tool, index) => {
    const earlier = firstIndex.get(tool.name);
    if (earlier !== undefined) {
      out.push({
        ...diag(ctx, 'error', ['tools', index, 'name'], false, 'duplicate_tool', `tool "${tool.name}" is pinned twice in McpServer "${document.name}": at ${where(ctx, ['tools', earlier, 'name'])} and here`),
        hint: 'an MCP server declares each tool once; run guardctl mcp-pin again rather than editing tools by hand',
      });
    } else firstIndex.set(tool.name, index);
  });
  for (const { index, actual } of fingerprintMismatches(document.tools)) {
    const tool = document.tools[index]!;
    const fields = FINGERPRINTED_FIELDS[fingerprintVersionOf(actual)].join(', ');
    out.push({
      ...diag(ctx, 'error', ['tools', index, 'fingerprint'], false, 'fingerprint_mismatch', `tool "${tool.name}": the pinned fingerprint does not match its ${fields} (they hash to ${actual})`),
      hint: 'the pinned fields were edited by hand; re-pin with guardctl mcp-pin so the review covers what the server really declares',
    });
  }
  const outdated = outdatedPin(ctx, document);
  if (outdated) out.push(outdated);
  const hidden = hiddenText(ctx, document);
  if (hidden) out.push(hidden);
  const pinnedLoosely = new Set(document.tools.map((t) => looseName(t.name)));
  for (const list of ['allow_tools', 'deny_tools'] as const) {
    document[list]?.forEach((name, index) => {
      // allow_tools lets through exactly the names it holds; deny_tools also hides names that read the same.
      if (list === 'allow_tools' ? firstIndex.has(name) : pinnedLoosely.has(looseName(name))) return;
      out.push({
        ...diag(ctx, 'warning', [list, index], false, 'unpinned_tool', `${list} names "${printableToolName(name)}", which McpServer "${document.name}" does not pin`),
        hint:
          list === 'allow_tools'
            ? 'allow_tools compares names exactly (case and spaces count); check the spelling against tools[].name'
            : 'deny_tools hides the names that read the same (case, width, spaces and invisible characters aside); no pinned tool does',
      });
    });
  }
  if (out.slice(before).some((d) => d.severity === 'error')) return null;
  return { ctx, server: { name: document.name, document, source: startOf(ctx) } };
}

/**
 * One warning per document pinned by an earlier guardctl: what its pins leave unchecked, at
 * the first `sha256:` fingerprint (or the name, when only the instructions are missing).
 */
function outdatedPin(ctx: DocContext, document: McpServerDocument): Diagnostic | null {
  const old = document.tools.flatMap((tool, index) => (fingerprintVersionOf(tool.fingerprint) === 1 ? [index] : []));
  const unchecked: string[] = [];
  if (old.length > 0) unchecked.push(`the titles and output schemas of ${old.length} tool${old.length === 1 ? '' : 's'} (their fingerprints are "sha256:", which covers ${FINGERPRINTED_FIELDS[1].join(', ')})`);
  if (document.instructions === undefined) unchecked.push('the server\'s initialize instructions (the document has no instructions field)');
  if (unchecked.length === 0) return null;
  const path = old.length > 0 ? ['tools', old[0]!, 'fingerprint'] : ['name'];
  return {
    ...diag(ctx, 'warning', path, false, 'pin_outdated', `McpServer "${document.name}" does not pin ${unchecked.join(', nor ')}: they can change without drift`),
    hint: `re-pin and review the plan: guardctl mcp-pin --name ${document.name} --out ${ctx.file} ${'url' in document.transport ? `--upstream-url ${document.transport.url}` : `-- ${document.transport.command.join(' ')}`} (until then the gateway checks what this pin covers)`,
  };
}

/** Code points a reader does not see, or that move a terminal's cursor or colours (a line break and a tab show as themselves). */
const UNSEEN_ALL = /(?![\n\t])[\p{C}\p{Zl}\p{Zp}]/gu;

/**
 * One warning per document whose pinned texts (instructions, tool names, titles,
 * descriptions, any string or key of the schemas and annotations) hold code points a
 * reader cannot see, at the first: the model reads them (tag characters spell whole
 * sentences), and the plan of a new server shows no tool text to review them in.
 */
function hiddenText(ctx: DocContext, document: McpServerDocument): Diagnostic | null {
  const found: Array<{ path: Array<string | number>; atKey: boolean; points: string[] }> = [];
  const look = (text: string, path: Array<string | number>, atKey: boolean) => {
    const points = text.match(UNSEEN_ALL);
    if (points) found.push({ path, atKey, points });
  };
  // Walked without recursion: schemas nest as deep as the server made them.
  const todo: Array<[value: unknown, path: Array<string | number>]> = [[document.tools, ['tools']]];
  if (typeof document.instructions === 'string') look(document.instructions, ['instructions'], false);
  for (let next = 0; next < todo.length; next++) {
    const [value, path] = todo[next]!;
    if (typeof value === 'string') look(value, path, false);
    else if (Array.isArray(value)) value.forEach((item, index) => todo.push([item, [...path, index]]));
    else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (key === 'fingerprint' && path.length === 2) continue;
        look(key, [...path, key], true);
        todo.push([item, [...path, key]]);
      }
    }
  }
  const first = found[0];
  if (!first) return null;
  const shown = [...new Set(first.points)].slice(0, 3).map((c) => `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);
  const others = found.length - 1;
  const where = `${formatPath(first.path)}${first.atKey ? ' (a key)' : ''}`;
  const message = `McpServer "${document.name}": ${where} holds ${first.points.length} code point${first.points.length === 1 ? '' : 's'} a reader cannot see (${shown.join(', ')}${new Set(first.points).size > 3 ? ', ...' : ''})${others > 0 ? `, and ${others} other field${others === 1 ? '' : 's'} hold some` : ''}: the model reads them`;
  return {
    ...diag(ctx, 'warning', first.path, first.atKey, 'hidden_text', printableText(message)),
    hint: 'read them spelt out before applying: the pin file writes them as escapes (\\U000E0041) and guardctl plan as \\u{e0041}; hide a tool you cannot vouch for with deny_tools',
  };
}

export function checkMcpServers(servers: readonly McpServerSeen[], out: Diagnostic[]): void {
  const first = new Map<string, McpServerSeen>();
  const exposedBy = new Map<string, { seen: McpServerSeen; index: number }>();
  for (const seen of servers) {
    const { ctx, server } = seen;
    const earlier = first.get(server.name);
    if (earlier) {
      out.push({
        ...diag(ctx, 'error', ['name'], false, 'duplicate_mcp_server', `McpServer "${server.name}" is defined twice: at ${where(earlier.ctx, ['name'])} and at ${where(ctx, ['name'])}`),
        hint: 'McpServer names are the key guardctl syncs by and the gateway\'s --mcp-server-name; rename one or delete the copy',
      });
      continue;
    }
    first.set(server.name, seen);
    server.document.tools.forEach((tool, index) => {
      if (!toolPermitted(server.document, tool.name)) return;
      // Names that read the same collide too: a model told of Send_Email and send_email takes them for one tool.
      const key = looseName(tool.name);
      const other = exposedBy.get(key);
      if (!other) {
        exposedBy.set(key, { seen, index });
        return;
      }
      if (other.seen === seen) return;
      const otherName = other.seen.server.document.tools[other.index]!.name;
      const [name, earlier] = [printableToolName(tool.name), printableToolName(otherName)];
      const what = otherName === tool.name ? `tool "${name}" is exposed` : `tool "${name}" reads the same as tool "${earlier}": they are exposed`;
      out.push({
        ...diag(ctx, 'error', ['tools', index, 'name'], false, 'tool_collision', `${what} by McpServer "${server.name}" and by McpServer "${other.seen.server.name}" (${where(other.seen.ctx, ['tools', other.index, 'name'])})`),
        hint: `an agent behind both gateways could not tell them apart; hide it in one of them with deny_tools: ["${tool.name}"]`,
      });
    });
  }
}
