/**
 * PURE: the McpServer part of a plan. A changed server shows its instructions as a line
 * diff and lists its tools added, removed and changed; a changed tool shows its description
 * as a line diff and its title, schemas and annotations as field diffs, which is what a
 * reviewer reads for a rug pull (a description or instructions that grew an instruction).
 * With prune, the owner's servers the directory no longer defines are deleted.
 */
import type { McpServerBody, PinnedTool } from '../model/index.js';
import { FINGERPRINTED_FIELDS, deepEqual, fingerprintVersionOf } from './canonical.js';
import type { ActualState, DesiredState } from './desired-state.js';
import { lineDiff } from './line-diff.js';
import { diffValues, type Change, type Conflict } from './plan-types.js';


export interface McpToolDiff {
  name: string;
  status: 'added' | 'removed' | 'changed';
  /** Changed tools whose description changed: the line diff. */
  description?: string[];
  /**
   * Changed tools: field diffs of title, input_schema, output_schema and annotations (paths
   * start with them), and `fingerprint` when the pin's fingerprint version changed (what it covers).
   */
  schema?: Change[];
}

/** What a fingerprint covers, as a plan says it: `sha256-v2: title, description, ...`. */
function coverage(fingerprint: string): string {
  const version = fingerprintVersionOf(fingerprint);
  return `${version === 1 ? 'sha256:' : 'sha256-v2:'} covers ${FINGERPRINTED_FIELDS[version].join(', ')}`;
}

export type McpServerOperation =
  | { op: 'create_mcp_server'; name: string; server: McpServerBody; source: string | null; managed_by: string; tools: McpToolDiff[] }
  | {
      op: 'update_mcp_server';
      name: string;
      server: McpServerBody;
      source: string | null;
      managed_by: string;
      changes: Change[];
      tools: McpToolDiff[];
      /** Changed instructions that are text on either side: the line diff (the change itself is in `changes`). */
      instructions?: string[];
    }
  | { op: 'delete_mcp_server'; name: string; managed_by: string | null; source: string | null };

export function diffTools(have: readonly PinnedTool[], want: readonly PinnedTool[]): McpToolDiff[] {
  const before = new Map(have.map((t) => [t.name, t]));
  const after = new Map(want.map((t) => [t.name, t]));
  const out: McpToolDiff[] = [];
  for (const tool of want) {
    const old = before.get(tool.name);
    if (!old) {
      out.push({ name: tool.name, status: 'added' });
      continue;
    }
    if (old.fingerprint === tool.fingerprint) continue;
    const diff: McpToolDiff = { name: tool.name, status: 'changed' };
    if ((old.description ?? '') !== (tool.description ?? '')) diff.description = lineDiff(old.description ?? '', tool.description ?? '');
    const schema = [
      ...diffValues('title', old.title, tool.title),
      ...diffValues('input_schema', old.input_schema, tool.input_schema),
      ...diffValues('output_schema', old.output_schema ?? {}, tool.output_schema ?? {}),
      ...diffValues('annotations', old.annotations ?? {}, tool.annotations ?? {}),
    ];
    if (fingerprintVersionOf(old.fingerprint) !== fingerprintVersionOf(tool.fingerprint)) schema.push({ path: 'fingerprint', before: coverage(old.fingerprint), after: coverage(tool.fingerprint) });
    if (schema.length > 0) diff.schema = schema;
    out.push(diff);
  }
  for (const tool of have) if (!after.has(tool.name)) out.push({ name: tool.name, status: 'removed' });
  return out;
}

function diffServer(have: McpServerBody, want: McpServerBody): Change[] {
  const changes: Change[] = [];
  for (const key of ['description', 'transport', 'allow_tools', 'deny_tools'] as const) {
    if (!deepEqual(have[key] ?? null, want[key] ?? null)) changes.push({ path: key, before: have[key], after: want[key] });
  }
  // Unpinned (absent) and none (null) differ: the first checks nothing, the second refuses any.
  if (have.instructions !== want.instructions) changes.push({ path: 'instructions', before: have.instructions, after: want.instructions });
  return changes;
}

function instructionsDiff(have: McpServerBody, want: McpServerBody): string[] | undefined {
  if (have.instructions === want.instructions) return undefined;
  const before = have.instructions;
  const after = want.instructions;
  if (typeof before === 'string' && typeof after === 'string') return lineDiff(before, after);
  if (typeof after === 'string') return after.split('\n').map((line) => `+ ${line}`);
  if (typeof before === 'string') return before.split('\n').map((line) => `- ${line}`);
  return undefined;
}

export function planMcpServers(
  desired: DesiredState,
  actual: ActualState,
  managedBy: string,
  options: { prune: boolean; force: boolean; followSources: boolean },
): { operations: McpServerOperation[]; conflicts: Conflict[] } {
  const operations: McpServerOperation[] = [];
  const conflicts: Conflict[] = [];
  if (desired.mcp_servers === undefined) return { operations, conflicts };
  const actualServers = new Map((actual.mcp_servers ?? []).map((s) => [s.server.name, s]));
  for (const want of desired.mcp_servers) {
    const have = actualServers.get(want.server.name);
    const name = want.server.name;
    if (!have) {
      operations.push({ op: 'create_mcp_server', name, server: want.server, source: want.source, managed_by: managedBy, tools: diffTools([], want.server.tools) });
      continue;
    }
    const tools = diffTools(have.server.tools, want.server.tools);
    const changes = diffServer(have.server, want.server);
    // The tools' order is the server's; a reordering alone is not worth an apply.
    if (tools.length > 0) changes.push({ path: 'tools', before: `${have.server.tools.length} tools`, after: `${want.server.tools.length} tools` });
    if (have.managed_by !== managedBy) {
      if (changes.length === 0 && !options.force) continue;
      if (!options.force) {
        conflicts.push({ name, managed_by: have.managed_by, changes });
        continue;
      }
      changes.push({ path: 'managed_by', before: have.managed_by, after: managedBy });
    }
    if (changes.length === 0 && options.followSources && have.source !== want.source) changes.push({ path: 'source', before: have.source, after: want.source });
    if (changes.length === 0) continue;
    const instructions = instructionsDiff(have.server, want.server);
    operations.push({ op: 'update_mcp_server', name, server: want.server, source: want.source, managed_by: managedBy, changes, tools, ...(instructions ? { instructions } : {}) });
  }
  if (options.prune) {
    const wanted = new Set(desired.mcp_servers.map((s) => s.server.name));
    for (const have of actual.mcp_servers ?? []) {
      if (wanted.has(have.server.name) || have.managed_by !== managedBy) continue;
      operations.push({ op: 'delete_mcp_server', name: have.server.name, managed_by: have.managed_by, source: have.source });
    }
  }
  return { operations, conflicts };
}
