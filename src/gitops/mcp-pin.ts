/**
 * PURE: the `kind: McpServer` document `guardctl mcp-pin` writes from the tools a live
 * server lists. Keys come in a fixed order so a re-pin diffs only what changed; a re-pin
 * keeps what people wrote (description, allow_tools, deny_tools) and replaces the tools.
 */
import { stringify } from 'yaml';
import type { McpServerDocument, McpTransport, PinnedTool } from '../model/index.js';
import { mcpToolFingerprint } from './canonical.js';

/** A tool as the MCP SDK's tools/list answers it (only the pinned fields are read). */
export interface ListedTool {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown> | undefined;
}

export function pinnedToolOf(tool: ListedTool): PinnedTool {
  const pinned: PinnedTool = { name: tool.name, input_schema: tool.inputSchema, fingerprint: '' };
  if (tool.description !== undefined) pinned.description = tool.description;
  if (tool.annotations !== undefined) pinned.annotations = tool.annotations;
  pinned.fingerprint = mcpToolFingerprint(pinned);
  return pinned;
}

export function pinDocument(
  name: string,
  transport: McpTransport,
  tools: readonly ListedTool[],
  previous?: Pick<McpServerDocument, 'description' | 'allow_tools' | 'deny_tools'>,
): McpServerDocument {
  const doc: McpServerDocument = { kind: 'McpServer', name, transport, tools: [] };
  if (previous?.description !== undefined) doc.description = previous.description;
  if (previous?.allow_tools !== undefined) doc.allow_tools = previous.allow_tools;
  if (previous?.deny_tools !== undefined) doc.deny_tools = previous.deny_tools;
  // Sorted by name: servers may list in any order, and the file should not churn.
  doc.tools = tools.map(pinnedToolOf).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return doc;
}

/** The YAML text: fixed key order (kind, name, description, transport, allow/deny, tools). */
export function pinYaml(doc: McpServerDocument): string {
  const ordered = {
    kind: doc.kind,
    name: doc.name,
    ...(doc.description !== undefined ? { description: doc.description } : {}),
    transport: doc.transport,
    ...(doc.allow_tools !== undefined ? { allow_tools: doc.allow_tools } : {}),
    ...(doc.deny_tools !== undefined ? { deny_tools: doc.deny_tools } : {}),
    tools: doc.tools.map((t) => ({
      name: t.name,
      ...(t.description !== undefined ? { description: t.description } : {}),
      input_schema: t.input_schema,
      ...(t.annotations !== undefined ? { annotations: t.annotations } : {}),
      fingerprint: t.fingerprint,
    })),
  };
  return `# Pinned by guardctl mcp-pin: review tool changes in plan, re-pin rather than edit tools by hand.\n${stringify(ordered, { lineWidth: 0, sortMapEntries: false })}`;
}
