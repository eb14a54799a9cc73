/**
 * Server state -> YAML files in the directory format: one file per control (named after
 * it) and agents.yaml. Deterministic, so exporting twice gives the same bytes, and the
 * loader reads it back to the same desired state (export then plan = no changes).
 */
import { pinYaml } from './mcp-pin.js';
import { stringify } from 'yaml';
import type { ControlData } from '../model/index.js';
import type { ActualState } from './desired-state.js';

/**
 * The editor comment when the caller gives none: the schema in the repository, relative to
 * an export into `controls/` at its root. `guardctl export` passes the line of
 * schema-location.ts, which finds the schema from where the files go.
 */
export const SCHEMA_LINE = '# yaml-language-server: $schema=../schema/guardctl.schema.json';

export interface ExportedFile {
  path: string;
  text: string;
}

export interface ExportResult {
  files: ExportedFile[];
  /** Controls left out because they have no data yet (nothing to write). */
  skipped: string[];
}

export function exportState(state: ActualState, schemaLine = SCHEMA_LINE): ExportResult {
  const files: ExportedFile[] = [];
  const skipped: string[] = [];
  const used = new Set<string>(['agents', 'policies', 'mcp-servers']);
  for (const control of [...state.controls].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!control.data) {
      skipped.push(control.name);
      continue;
    }
    const base = uniqueSlug(control.name, used);
    files.push({ path: `${base}.yaml`, text: `${schemaLine}\n${stringify(controlDocument(control.name, control.data), { lineWidth: 0 })}` });
  }
  if (state.agents.length > 0) {
    const docs = state.agents.map((a) => {
      const doc: Record<string, unknown> = { kind: 'Agent', agent_name: a.agent_name };
      if (a.agent_description !== null) doc.agent_description = a.agent_description;
      if (a.agent_version !== null) doc.agent_version = a.agent_version;
      if (a.steps.length > 0) doc.steps = a.steps;
      if (a.metadata !== null) doc.metadata = a.metadata;
      if (a.labels !== undefined && Object.keys(a.labels).length > 0) doc.labels = a.labels;
      // Links to controls that were not exported would dangle; they have no data to run anyway.
      doc.controls = a.controls.filter((name) => !skipped.includes(name));
      return stringify(doc, { lineWidth: 0 });
    });
    files.push({ path: 'agents.yaml', text: `${schemaLine}\n${docs.join('---\n')}` });
  }
  if (state.policies && state.policies.length > 0) {
    const docs = state.policies.map((p) => {
      const doc: Record<string, unknown> = { kind: 'Policy', name: p.name };
      if (p.description !== null) doc.description = p.description;
      doc.controls = p.controls.filter((name) => !skipped.includes(name));
      doc.agents = p.agents;
      return stringify(doc, { lineWidth: 0 });
    });
    files.push({ path: 'policies.yaml', text: `${schemaLine}\n${docs.join('---\n')}` });
  }
  if (state.mcp_servers && state.mcp_servers.length > 0) {
    // The same text mcp-pin writes, so an exported server re-pins and diffs cleanly.
    const docs = state.mcp_servers.map((s) => pinYaml({ kind: 'McpServer', ...s.server }).replace(/^#.*\n/, ''));
    files.push({ path: 'mcp-servers.yaml', text: `${schemaLine}\n${docs.join('---\n')}` });
  }
  return { files, skipped };
}

/** The keys a control document starts with, in reading order; any other key follows, sorted. */
const CONTROL_KEY_ORDER = ['description', 'enabled', 'mode', 'execution', 'reveal_match', 'scope', 'selector', 'evaluator', 'condition', 'action'];

/**
 * Every field of the data, so a field added to the model is exported without a change
 * here (test/gitops/export-round-trip.test.ts holds it); only the defaults the loader
 * puts back (execution: server, an empty scope) are left out to stay short.
 */
function controlDocument(name: string, data: ControlData): Record<string, unknown> {
  const doc: Record<string, unknown> = { kind: 'Control', name };
  const fields = data as Record<string, unknown>;
  const rest = Object.keys(fields).filter((key) => !CONTROL_KEY_ORDER.includes(key)).sort();
  for (const key of [...CONTROL_KEY_ORDER, ...rest]) {
    const value = fields[key];
    if (value === undefined) continue;
    if (key === 'execution' && value === 'server') continue;
    if (key === 'scope' && Object.keys(value as object).length === 0) continue;
    doc[key] = value;
  }
  return doc;
}

/** A file name from a control name: lowercase letters, digits and dashes; unique in the export. */
export function uniqueSlug(name: string, used: Set<string>): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '').replace(/^\.+/, '') || 'control';
  let candidate = slug;
  for (let i = 2; used.has(candidate); i++) candidate = `${slug}-${i}`;
  used.add(candidate);
  return candidate;
}
