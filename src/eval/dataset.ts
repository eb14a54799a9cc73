/**
 * One dataset line to one labelled case, or a diagnostic saying why not. PURE. Two line
 * forms are read:
 * - `{id, agent?, stage, step, expect}`, expect holding any of `decision`, `matched`
 *   (the controls that should match; every other control evaluated should not) and
 *   `triggers` (`{control: bool}`, only the controls named are scored);
 * - OpenAI Guardrails' eval lines `{id, data, expected_triggers}`: `data` is the text the
 *   controls select.
 */
import { z } from 'zod';
import { StageSchema, StepSchema } from '../model/index.js';
import type { EvalCase, Expectation, LineDiagnostic } from './types.js';

const IdSchema = z.union([z.string().min(1), z.number()]).transform(String);

const StepLineSchema = z.object({
  id: IdSchema,
  agent: z.string().min(1).optional(),
  stage: StageSchema,
  step: StepSchema,
  expect: z
    .strictObject({
      decision: z.enum(['allow', 'deny', 'steer']).optional(),
      matched: z.array(z.string().min(1)).optional(),
      triggers: z.record(z.string().min(1), z.boolean()).optional(),
    })
    .refine((e) => e.decision !== undefined || e.matched !== undefined || e.triggers !== undefined, {
      message: 'expect needs decision, matched or triggers',
    }),
});

const DataLineSchema = z.object({
  id: IdSchema,
  agent: z.string().min(1).optional(),
  data: z.unknown().refine((d) => d !== undefined && d !== null, 'data must not be null'),
  expected_triggers: z.record(z.string().min(1), z.boolean()),
});

/** What the dataset may name: checked per line so that a typo is a diagnostic, not a silent zero. */
export interface KnownNames {
  /** Controls that a case without an agent is evaluated against. */
  controls: ReadonlySet<string>;
  /** Agents and their controls; undefined when agents are not known (the server decides). */
  agents?: ReadonlyMap<string, ReadonlySet<string>>;
  /** The agent for lines that name none (--agent). */
  defaultAgent?: string | undefined;
}

export type ParsedLine = { case: EvalCase } | { diagnostic: LineDiagnostic } | null;

/** Parses line `line` (1-based); null for a blank line. */
export function parseCase(text: string, line: number, known: KnownNames): ParsedLine {
  if (text.trim() === '') return null;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // JSON.parse quotes the text it choked on: only the position is kept, the line may hold a secret.
    const at = /position (\d+)/.exec(err instanceof Error ? err.message : '')?.[1];
    const where = at === undefined ? '' : ` at column ${Number(at) + 1}`;
    return bad(line, undefined, `not JSON${where}`, 'write one JSON object per line (JSON Lines)');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return bad(line, undefined, 'not a JSON object', 'each line is one object: {"id": …, "stage": …, "step": …, "expect": …}');
  }
  const obj = raw as Record<string, unknown>;
  const id = typeof obj.id === 'string' || typeof obj.id === 'number' ? String(obj.id) : undefined;
  if ('steps' in obj) {
    return bad(line, id, 'multi-step cases are not supported yet', 'give each step its own line with its own expect');
  }
  if (id === undefined) return bad(line, undefined, 'missing id', 'give every line an "id" (string or number) so misses can be listed by it');
  if ('data' in obj || 'expected_triggers' in obj) return parseDataLine(obj, line, id, known);
  if (!('expect' in obj)) return bad(line, id, 'missing expect', 'add "expect": {"decision": …} or {"matched": [...]} or {"triggers": {…}}');
  const parsed = StepLineSchema.safeParse(obj);
  if (!parsed.success) return bad(line, id, issueText(parsed.error), 'a line needs id, stage (pre or post), step {type, name, input} and expect');
  const p = parsed.data;
  const agent = p.agent ?? known.defaultAgent;
  const scope = scopeOf(agent, known);
  if (typeof scope === 'string') return bad(line, p.id, scope, 'name an agent of the directory (kind: Agent) or leave agent out');
  const triggers = new Map<string, boolean>();
  if (p.expect.matched !== undefined) {
    const wanted = new Set(p.expect.matched);
    for (const name of wanted) if (!scope.has(name)) return unknownControl(line, p.id, name, agent);
    for (const name of scope) triggers.set(name, wanted.has(name));
  }
  for (const [name, want] of Object.entries(p.expect.triggers ?? {})) {
    if (!scope.has(name)) return unknownControl(line, p.id, name, agent);
    triggers.set(name, want);
  }
  const expect: Expectation = p.expect.decision === undefined ? { triggers } : { decision: p.expect.decision, triggers };
  return { case: { kind: 'step', id: p.id, line, agent, stage: p.stage, step: p.step, asSelected: false, expect } };
}

function parseDataLine(obj: Record<string, unknown>, line: number, id: string | undefined, known: KnownNames): ParsedLine {
  const parsed = DataLineSchema.safeParse(obj);
  if (!parsed.success) return bad(line, id, issueText(parsed.error), 'a Guardrails line needs id, data and expected_triggers {control: true|false}');
  const p = parsed.data;
  const agent = p.agent ?? known.defaultAgent;
  const scope = scopeOf(agent, known);
  if (typeof scope === 'string') return bad(line, p.id, scope, 'name an agent of the directory (kind: Agent) or leave agent out');
  const triggers = new Map<string, boolean>();
  for (const [name, want] of Object.entries(p.expected_triggers)) {
    if (!scope.has(name)) return unknownControl(line, p.id, name, agent);
    triggers.set(name, want);
  }
  const step = { type: 'llm' as const, name: 'eval', input: p.data };
  return { case: { kind: 'step', id: p.id, line, agent, stage: 'pre', step, asSelected: true, expect: { triggers } } };
}

/** The controls a case is scored against, or why there are none. */
function scopeOf(agent: string | undefined, known: KnownNames): ReadonlySet<string> | string {
  if (agent === undefined || known.agents === undefined) return known.controls;
  const controls = known.agents.get(agent.trim().toLowerCase());
  return controls ?? `unknown agent "${agent}"`;
}

function unknownControl(line: number, id: string, name: string, agent: string | undefined): ParsedLine {
  const where = agent === undefined ? 'the directory' : `agent "${agent}"`;
  return bad(line, id, `unknown control "${name}"`, `name a control of ${where}; its controls are what the case is evaluated against`);
}

function issueText(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'invalid line';
  const path = issue.path.join('.');
  return path === '' ? issue.message : `${path}: ${issue.message}`;
}

function bad(line: number, id: string | undefined, message: string, hint: string): ParsedLine {
  return { diagnostic: id === undefined ? { line, message, hint } : { line, id, message, hint } };
}
