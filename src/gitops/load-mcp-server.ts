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
 */
import type { z } from 'zod';
import { McpServerDocumentSchema, fieldIssuesOf, textIssuesOf, toolPermitted, type FieldIssue, type McpServerDocument } from '../model/index.js';
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
  for (const list of ['allow_tools', 'deny_tools'] as const) {
    document[list]?.forEach((name, index) => {
      if (firstIndex.has(name)) return;
      out.push({
        ...diag(ctx, 'warning', [list, index], false, 'unpinned_tool', `${list} names "${name}", which McpServer "${document.name}" does not pin`),
        hint: 'names compare exactly (case and spaces count); check the spelling against tools[].name',
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
      const other = exposedBy.get(tool.name);
      if (!other) {
        exposedBy.set(tool.name, { seen, index });
        return;
      }
      out.push({
        ...diag(ctx, 'error', ['tools', index, 'name'], false, 'tool_collision', `tool "${tool.name}" is exposed by McpServer "${server.name}" and by McpServer "${other.seen.server.name}" (${where(other.seen.ctx, ['tools', other.index, 'name'])})`),
        hint: `an agent behind both gateways could not tell them apart; hide it in one of them with deny_tools: ["${tool.name}"]`,
      });
    });
  }
}
