/**
 * PURE: the `kind: McpServer` document `guardctl mcp-pin` writes from what a live server
 * tells the model: its initialize instructions and the tools it lists. Keys come in a fixed
 * order so a re-pin diffs only what changed; a re-pin keeps what people wrote (description,
 * allow_tools, deny_tools) and replaces the instructions and the tools.
 */
import { Document, visit } from 'yaml';
import type { McpServerDocument, McpTransport, PinnedTool } from '../model/index.js';
import { mcpToolFingerprint } from './canonical.js';

/** A tool as the MCP SDK's tools/list answers it (only the pinned fields are read). */
export interface ListedTool {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown> | undefined;
  annotations?: Record<string, unknown> | undefined;
}

export function pinnedToolOf(tool: ListedTool): PinnedTool {
  const pinned: PinnedTool = { name: tool.name, input_schema: tool.inputSchema, fingerprint: '' };
  if (tool.title !== undefined) pinned.title = tool.title;
  if (tool.description !== undefined) pinned.description = tool.description;
  if (tool.outputSchema !== undefined) pinned.output_schema = tool.outputSchema;
  if (tool.annotations !== undefined) pinned.annotations = tool.annotations;
  pinned.fingerprint = mcpToolFingerprint(pinned);
  return pinned;
}

/**
 * `instructions` is what the server's initialize answer carried; none (or an empty text)
 * is pinned as null, so that instructions appearing later are drift too.
 */
export function pinDocument(
  name: string,
  transport: McpTransport,
  tools: readonly ListedTool[],
  previous?: Pick<McpServerDocument, 'description' | 'allow_tools' | 'deny_tools'>,
  instructions?: string,
): McpServerDocument {
  const doc: McpServerDocument = { kind: 'McpServer', name, transport, instructions: instructions === undefined || instructions === '' ? null : instructions, tools: [] };
  if (previous?.description !== undefined) doc.description = previous.description;
  if (previous?.allow_tools !== undefined) doc.allow_tools = previous.allow_tools;
  if (previous?.deny_tools !== undefined) doc.deny_tools = previous.deny_tools;
  // Sorted by name: servers may list in any order, and the file should not churn.
  doc.tools = tools.map(pinnedToolOf).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return doc;
}

/** The YAML text: fixed key order (kind, name, description, transport, instructions, allow/deny, tools). */
export function pinYaml(doc: McpServerDocument): string {
  const ordered = {
    kind: doc.kind,
    name: doc.name,
    ...(doc.description !== undefined ? { description: doc.description } : {}),
    transport: doc.transport,
    ...(doc.instructions !== undefined ? { instructions: doc.instructions } : {}),
    ...(doc.allow_tools !== undefined ? { allow_tools: doc.allow_tools } : {}),
    ...(doc.deny_tools !== undefined ? { deny_tools: doc.deny_tools } : {}),
    tools: doc.tools.map((t) => ({
      name: t.name,
      ...(t.title !== undefined ? { title: t.title } : {}),
      ...(t.description !== undefined ? { description: t.description } : {}),
      input_schema: t.input_schema,
      ...(t.output_schema !== undefined ? { output_schema: t.output_schema } : {}),
      ...(t.annotations !== undefined ? { annotations: t.annotations } : {}),
      fingerprint: t.fingerprint,
    })),
  };
  return `# Pinned by guardctl mcp-pin: review tool changes in plan, re-pin rather than edit tools by hand.\n${visibleYaml(ordered)}`;
}

/** Code points a reader does not see, or that move a terminal's cursor or colours (a line break and a tab show as themselves). */
const UNSEEN = /(?![\n\t])[\p{C}\p{Zl}\p{Zp}]/u;
const UNSEEN_ALL = new RegExp(UNSEEN.source, 'gu');

/**
 * YAML in which every code point a reviewer could not see is an escape (`\u200B`,
 * `\U000E0041`): a server's text reaches the model whole, and tag characters spell words a
 * model reads where an editor or a pull request shows nothing. Such strings (keys too) are
 * written double-quoted, the one YAML style with escapes; they read back the same.
 */
function visibleYaml(value: object): string {
  const doc = new Document(value);
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && UNSEEN.test(node.value)) node.type = 'QUOTE_DOUBLE';
    },
  });
  // The yaml package escapes control characters in double quotes; format, private-use and unassigned ones are left, inside those quotes.
  return doc.toString({ lineWidth: 0 }).replace(UNSEEN_ALL, (c) => {
    const hex = c.codePointAt(0)!.toString(16).toUpperCase();
    return hex.length <= 4 ? `\\u${hex.padStart(4, '0')}` : `\\U${hex.padStart(8, '0')}`;
  });
}
