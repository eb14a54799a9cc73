/**
 * PURE: YAML texts in, documents and diagnostics out. Never throws, never prints, no I/O.
 * Rules run in order: parse -> kind -> schema (+ evaluator checks via the engine's single
 * validation implementation, injected as `validateControl`) -> cross-file rules.
 */
import { LineCounter, isMap, isScalar, parseAllDocuments, type Document } from 'yaml';
import type { z } from 'zod';
import type { ValidationOutcome } from '../engine/api.js';
import {
  AgentDocumentSchema,
  ControlDocumentSchema,
  controlDataOf,
  fieldIssuesOf,
  textIssuesOf,
  type AgentDocument,
  type ControlData,
  type FieldIssue,
} from '../model/index.js';
import type { Diagnostic } from './diagnostics.js';
import { sortDiagnostics } from './diagnostics.js';
import { classifyIssue, hintFor } from './hints.js';
import { locateField, parseFieldPath, spanOfOffsets, type Span } from './positions.js';
import { allowedKeysAt } from './schema-keys.js';
import { diag, firstLine, locatorOf, startOf, type DocContext, type SourceLocation } from './load-context.js';
import { checkCrossFile, type SeenAgent, type SeenControl } from './load-rules.js';
import { aliasOverflow, MAX_ALIAS_EXPANSION } from './alias-size.js';
import { checkPolicies, loadPolicy, type LoadedPolicy, type PolicySeen } from './load-policy.js';
import { checkMcpServers, loadMcpServer, type LoadedMcpServer, type McpServerSeen } from './load-mcp-server.js';

export type { Span };
export type { SourceLocation } from './load-context.js';
export type { LoadedPolicy } from './load-policy.js';
export type { LoadedMcpServer } from './load-mcp-server.js';

export interface SourceFile {
  /** Path shown in diagnostics, relative to the directory being loaded. */
  path: string;
  text: string;
}


export interface LoadedControl {
  name: string;
  /** The stored form: what `PUT /controls/{id}/data` receives. */
  data: ControlData;
  source: SourceLocation;
  /** Where a field of this document is (for issues found later, such as the server's). */
  locate(field: string, atKey?: boolean): Span;
}

export interface LoadedAgent {
  /** Normalised (trimmed, lowercased). */
  agent_name: string;
  document: AgentDocument;
  /** Control names in file order. */
  controls: string[];
  source: SourceLocation;
}

/** A `kind: Test` document, kept raw for `guardctl test`. */
export interface LoadedTest {
  value: unknown;
  source: SourceLocation;
  /** Where a field of this document is, for test diagnostics (`cases[2].expect.decision`). */
  locate?(field: string, atKey?: boolean): Span;
}

export interface LoadResult {
  controls: LoadedControl[];
  agents: LoadedAgent[];
  policies: LoadedPolicy[];
  mcpServers: LoadedMcpServer[];
  tests: LoadedTest[];
  diagnostics: Diagnostic[];
}

/**
 * The engine's validation of one `kind: Control` document (see control-validator.ts);
 * `evaluatorNames`, when given, lets an unknown evaluator's hint name the nearest one.
 */
export type ControlValidator = ((document: unknown) => ValidationOutcome | { ok: true; data: unknown }) & {
  evaluatorNames?: () => readonly string[];
};

export interface LoadOptions {
  validateControl: ControlValidator;
}

export const KINDS = ['Control', 'Agent', 'Policy', 'McpServer', 'Test'] as const;

/** Diagnostics of a document that could not be read at all (its names are unknown). */
const UNREADABLE = new Set(['yaml_syntax', 'alias_expansion', 'not_a_mapping']);

interface ControlSeen extends SeenControl {
  valid: LoadedControl | null;
}

interface AgentSeen extends SeenAgent {
  agent: LoadedAgent;
}

export function loadDocuments(files: readonly SourceFile[], options: LoadOptions): LoadResult {
  const diagnostics: Diagnostic[] = [];
  const controls: ControlSeen[] = [];
  const agents: AgentSeen[] = [];
  const tests: LoadedTest[] = [];
  const policies: PolicySeen[] = [];
  const mcpServers: McpServerSeen[] = [];

  for (const file of files) {
    for (const ctx of parseFile(file, diagnostics)) {
      const value = readDocument(ctx, diagnostics);
      if (value === undefined) continue;
      const kind = checkKind(ctx, value, diagnostics);
      if (kind === 'Control') {
        const seen = loadControl(ctx, value, options, diagnostics);
        if (seen) controls.push(seen);
      } else if (kind === 'Agent') {
        const agent = loadAgent(ctx, value, diagnostics);
        if (agent) agents.push({ ctx, agent });
      } else if (kind === 'Policy') {
        const policy = loadPolicy(ctx, value, diagnostics, issueDiagnostic);
        if (policy) policies.push(policy);
      } else if (kind === 'McpServer') {
        const server = loadMcpServer(ctx, value, diagnostics, issueDiagnostic);
        if (server) mcpServers.push(server);
      } else if (kind === 'Test') {
        tests.push({ value, source: startOf(ctx), locate: (field, atKey = false) => locateField(ctx.doc, ctx.lineCounter, parseFieldPath(field), atKey) });
      }
    }
  }

  // A document that could not be read may define what other documents link: rules that
  // need every document would only add errors about what the broken file holds.
  const complete = !diagnostics.some((d) => UNREADABLE.has(d.code));
  const bound = new Set(policies.flatMap((p) => p.policy.document.controls));
  checkCrossFile(controls, agents, diagnostics, { complete, boundByPolicy: bound });
  const agentLabels = agents.map((a) => ({ agent_name: a.agent.agent_name, labels: a.agent.document.labels ?? {} }));
  const enabledByName = new Map<string, boolean>();
  for (const c of controls) if (!enabledByName.has(c.name)) enabledByName.set(c.name, c.enabled);
  checkPolicies(policies, enabledByName, agentLabels, diagnostics, complete);
  checkMcpServers(mcpServers, diagnostics);
  const serverByName = new Map<string, LoadedMcpServer>();
  for (const m of mcpServers) if (!serverByName.has(m.server.name)) serverByName.set(m.server.name, m.server);
  const policyByName = new Map<string, LoadedPolicy>();
  for (const p of policies) if (!policyByName.has(p.policy.name)) policyByName.set(p.policy.name, p.policy);

  const firstByName = new Map<string, LoadedControl>();
  for (const c of controls) if (c.valid && !firstByName.has(c.name)) firstByName.set(c.name, c.valid);
  const agentByName = new Map<string, LoadedAgent>();
  for (const a of agents) if (!agentByName.has(a.agent.agent_name)) agentByName.set(a.agent.agent_name, a.agent);
  return {
    controls: [...firstByName.values()],
    agents: [...agentByName.values()],
    policies: [...policyByName.values()],
    mcpServers: [...serverByName.values()],
    tests,
    diagnostics: sortDiagnostics(diagnostics),
  };
}

// ---- parse -------------------------------------------------------------------------

function parseFile(file: SourceFile, out: Diagnostic[]): DocContext[] {
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(file.text, { lineCounter, prettyErrors: false });
  const list: Document[] = Array.isArray(docs) ? docs : [];
  const nonEmpty = list.filter((d) => !isEmptyDocument(d) || d.errors.length > 0);
  if (nonEmpty.length === 0) {
    out.push({
      severity: 'error',
      file: file.path,
      line: 1,
      column: 1,
      field: '',
      code: 'empty_file',
      message: 'the file holds no YAML document',
      hint: 'add a document (kind: Control, Agent, Policy, McpServer or Test) or delete the file',
    });
    return [];
  }
  return nonEmpty.map((doc) => ({ file: file.path, doc, lineCounter }));
}

/** `---` with nothing after it (or only comments) is an empty document, not a null value. */
function isEmptyDocument(doc: Document): boolean {
  const contents = doc.contents;
  if (contents === null) return true;
  return isScalar(contents) && contents.value === null && (contents.source === undefined || contents.source === '');
}

/** The document as plain data, or undefined after reporting why it cannot be read. */
function readDocument(ctx: DocContext, out: Diagnostic[]): Record<string, unknown> | undefined {
  const { doc, lineCounter, file } = ctx;
  if (doc.errors.length > 0) {
    for (const error of doc.errors) {
      const span = spanOfOffsets(lineCounter, error.pos[0], error.pos[1]);
      out.push({
        severity: 'error',
        file,
        ...span,
        field: '',
        code: 'yaml_syntax',
        message: `YAML syntax error: ${firstLine(error.message)}`,
        hint: hintFor('yaml_syntax', ''),
      });
    }
    return undefined;
  }
  if (!isMap(doc.contents)) {
    const range = doc.contents?.range;
    const span = range ? spanOfOffsets(lineCounter, range[0], range[1]) : { line: 1, column: 1 };
    out.push({
      severity: 'error',
      file,
      ...span,
      field: '',
      code: 'not_a_mapping',
      message: 'a document must be a mapping (key: value pairs), not a list or a single value',
      hint: 'start the document with "kind: Control", "kind: Agent" or "kind: Test"',
    });
    return undefined;
  }
  const overflow = aliasOverflow(doc);
  if (overflow) {
    out.push({
      severity: 'error',
      file,
      ...spanOfOffsets(lineCounter, overflow.range[0], overflow.range[1]),
      field: '',
      code: 'alias_expansion',
      message: `YAML aliases expand this document by more than ${MAX_ALIAS_EXPANSION.toLocaleString('en-US')} values (this alias brings it to ${Number.isFinite(overflow.added) ? overflow.added.toLocaleString('en-US') : 'an endless number, it is inside its own anchor'})`,
      hint: 'write the values out, or split the list into several controls; aliases are for sharing small values',
    });
    return undefined;
  }
  try {
    return doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  } catch (error) {
    out.push({
      severity: 'error',
      ...startOf(ctx),
      field: '',
      code: 'yaml_syntax',
      message: `YAML error: ${error instanceof Error ? firstLine(error.message) : String(error)}`,
      hint: 'avoid aliases that expand too much; write the values out',
    });
    return undefined;
  }
}

function checkKind(ctx: DocContext, value: Record<string, unknown>, out: Diagnostic[]): string | null {
  const kind = value.kind;
  if (kind === undefined) {
    out.push(diag(ctx, 'error', [], false, 'missing_kind', `the document has no "kind"; expected one of ${KINDS.join(', ')}`));
    return null;
  }
  if (typeof kind !== 'string' || !(KINDS as readonly string[]).includes(kind)) {
    out.push({
      ...diag(ctx, 'error', ['kind'], false, 'unknown_kind', `unknown kind ${JSON.stringify(kind)}; expected one of ${KINDS.join(', ')}`),
      hint: hintFor('unknown_kind', 'kind', '', { given: typeof kind === 'string' ? kind : undefined }),
    });
    return null;
  }
  return kind;
}

// ---- schema ------------------------------------------------------------------------

function loadControl(
  ctx: DocContext,
  value: Record<string, unknown>,
  options: LoadOptions,
  out: Diagnostic[],
): ControlSeen | null {
  const name = typeof value.name === 'string' ? value.name : null;
  let issues: FieldIssue[];
  try {
    const outcome = options.validateControl(value);
    // Text no store can keep (NUL, lone surrogates: YAML's "\0" and "\ud800" escapes) is
    // refused here as the server would refuse it, so `validate` and `apply` agree.
    issues = [...textIssuesOf(value), ...(outcome.ok ? [] : outcome.issues)];
  } catch (error) {
    // The validator must not throw; if it does, the control is reported, not the run aborted.
    issues = [{ field: '', code: 'custom', message: `validation failed: ${error instanceof Error ? error.message : String(error)}` }];
  }
  issues = withoutShadowedMissing(issues, value);
  const names = options.validateControl.evaluatorNames?.() ?? [];
  for (const issue of issues) out.push(issueDiagnostic(ctx, issue, ControlDocumentSchema, names));
  if (name === null) return null;
  const enabled = value.enabled !== false;
  const labels = sessionLabelsOf(value);
  if (issues.length > 0) return { name, ctx, enabled, ...labels, valid: null };
  const parsed = ControlDocumentSchema.safeParse(value);
  if (!parsed.success) {
    // The engine accepted what the model rejects: report rather than guess.
    for (const issue of fieldIssuesOf(parsed.error)) out.push(issueDiagnostic(ctx, issue, ControlDocumentSchema, names));
    return { name, ctx, enabled, ...labels, valid: null };
  }
  return {
    name,
    ctx,
    enabled,
    ...labels,
    valid: {
      name,
      data: controlDataOf(parsed.data),
      source: startOf(ctx),
      locate: locatorOf(ctx),
    },
  };
}

/** The session labels a control document requires and adds, as written (for the cross-file rule). */
function sessionLabelsOf(value: Record<string, unknown>): { requiresLabels: string[]; addsLabels: string[]; shadow: boolean } {
  const strings = (list: unknown) => (Array.isArray(list) ? list.filter((l): l is string => typeof l === 'string') : []);
  const field = (holder: unknown, key: string) => (typeof holder === 'object' && holder !== null ? (holder as Record<string, unknown>)[key] : undefined);
  // A shadow control names the labels it would add and adds none.
  return { requiresLabels: strings(field(value.scope, 'session_labels')), addsLabels: strings(field(value.action, 'session_labels')), shadow: value.mode === 'shadow' };
}

function loadAgent(ctx: DocContext, value: Record<string, unknown>, out: Diagnostic[]): LoadedAgent | null {
  const text = textIssuesOf(value);
  for (const issue of text) out.push(issueDiagnostic(ctx, issue, AgentDocumentSchema, []));
  if (text.length > 0) return null;
  const parsed = AgentDocumentSchema.safeParse(value);
  if (!parsed.success) {
    for (const issue of fieldIssuesOf(parsed.error)) out.push(issueDiagnostic(ctx, issue, AgentDocumentSchema, []));
    return null;
  }
  return {
    agent_name: parsed.data.agent_name,
    document: parsed.data,
    controls: parsed.data.controls,
    source: startOf(ctx),
  };
}

/**
 * A typo of a required key (`desicion:`) is one mistake: the unknown key, whose hint names
 * the right one. The same object's complaint that the required key is missing or invalid
 * (its value is undefined) only repeats it, so it is left out.
 */
function withoutShadowedMissing(issues: FieldIssue[], value: Record<string, unknown>): FieldIssue[] {
  const parentOf = (field: string) => parseFieldPath(field).slice(0, -1).join('\u0000');
  const withUnknown = new Set(issues.filter((i) => classifyIssue(i) === 'unknown_field').map((i) => parentOf(i.field)));
  if (withUnknown.size === 0) return issues;
  return issues.filter((issue) => {
    if (classifyIssue(issue) === 'unknown_field' || !withUnknown.has(parentOf(issue.field))) return true;
    let node: unknown = value;
    for (const key of parseFieldPath(issue.field)) node = node !== null && typeof node === 'object' ? (node as Record<string | number, unknown>)[key] : undefined;
    return node !== undefined;
  });
}

/** `schema` is the document's kind, whose keys name the nearest one for an unknown key. */
function issueDiagnostic(ctx: DocContext, raw: FieldIssue, schema: z.ZodType, evaluators: readonly string[]): Diagnostic {
  // zod says "expected object, received undefined" for a missing field; say it plainly.
  const missing = raw.code === 'invalid_type' && /received undefined/.test(raw.message);
  const issue = missing ? { ...raw, code: 'missing_field', message: `required field "${raw.field.split('.').pop() ?? raw.field}" is missing` } : raw;
  const code = classifyIssue(issue);
  const path = parseFieldPath(issue.field);
  const message = issue.field && !missing ? `${issue.field}: ${issue.message}` : issue.message;
  const allowedKeys = code === 'unknown_field' ? allowedKeysAt(schema, path.slice(0, -1)) : [];
  return {
    ...diag(ctx, 'error', path, code === 'unknown_field', code, message),
    hint: hintFor(code, issue.field, issue.message, { allowedKeys, evaluators }),
  };
}
