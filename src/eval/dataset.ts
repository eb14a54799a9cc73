/**
 * One dataset line to one labelled case, or a diagnostic saying why not. PURE. Two line
 * forms are read:
 * - `{id, agent?, stage, step, expect}`, expect holding any of `decision`, `matched`
 *   (the controls that should match; every other control evaluated should not) and
 *   `triggers` (`{control: bool}`, only the controls named are scored);
 * - OpenAI Guardrails' eval lines `{id, data, expected_triggers}`: `data` is the text the
 *   controls select;
 * - multi-step cases `{id, agent?, steps: [{stage, step, expect}, ...]}`, evaluated in
 *   order in one fresh session, each step scored as case `ID#n`.
 */
import { z } from 'zod';
import { StageSchema, StepSchema } from '../model/index.js';
import type { EvalCase, Expectation, LineDiagnostic, StepCase } from './types.js';

const IdSchema = z.union([z.string().min(1), z.number()]).transform(String);

const ExpectSchema = z
  .strictObject({
    decision: z.enum(['allow', 'deny', 'steer']).optional(),
    matched: z.array(z.string().min(1)).optional(),
    triggers: z.record(z.string().min(1), z.boolean()).optional(),
  })
  .refine((e) => e.decision !== undefined || e.matched !== undefined || e.triggers !== undefined, {
    message: 'expect needs decision, matched or triggers',
  });
type ExpectInput = z.infer<typeof ExpectSchema>;

const StepLineSchema = z.object({
  id: IdSchema,
  agent: z.string().min(1).optional(),
  stage: StageSchema,
  step: StepSchema,
  expect: ExpectSchema,
});

/** At most this many steps in one case: a session is a run of an agent, not a dataset. */
export const MAX_SESSION_STEPS = 1000;

const SessionLineSchema = z.object({
  id: IdSchema,
  agent: z.string().min(1).optional(),
  steps: z
    .array(z.strictObject({ stage: StageSchema, step: StepSchema, expect: ExpectSchema }))
    .min(1, 'steps must hold at least one step')
    .max(MAX_SESSION_STEPS, `at most ${MAX_SESSION_STEPS} steps per case`),
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
  if (id === undefined) return bad(line, undefined, 'missing id', 'give every line an "id" (string or number) so misses can be listed by it');
  if ('steps' in obj) return parseSessionLine(obj, line, id, known);
  if ('data' in obj || 'expected_triggers' in obj) return parseDataLine(obj, line, id, known);
  if (!('expect' in obj)) return bad(line, id, 'missing expect', 'add "expect": {"decision": …} or {"matched": [...]} or {"triggers": {…}}');
  const parsed = StepLineSchema.safeParse(obj);
  if (!parsed.success) return bad(line, id, issueText(parsed.error), 'a line needs id, stage (pre or post), step {type, name, input} and expect');
  const p = parsed.data;
  const agent = p.agent ?? known.defaultAgent;
  const scope = scopeOf(agent, known);
  if (typeof scope === 'string') return bad(line, p.id, scope, 'name an agent of the directory (kind: Agent) or leave agent out');
  const expect = expectationOf(p.expect, scope);
  if (typeof expect === 'string') return unknownControl(line, p.id, expect, agent);
  return { case: { kind: 'step', id: p.id, line, agent, stage: p.stage, step: p.step, asSelected: false, expect } };
}

function parseSessionLine(obj: Record<string, unknown>, line: number, id: string, known: KnownNames): ParsedLine {
  const parsed = SessionLineSchema.safeParse(obj);
  if (!parsed.success) {
    // Steps are named as the report names them (ID#n, n from 1), not by zod's index from 0.
    const text = issueText(parsed.error).replace(/^steps\.(\d+)(?:\.|: )/, (_m, i: string) => `step ${Number(i) + 1}: `);
    return bad(line, id, text, 'a multi-step line needs id and steps: [{stage, step {type, name, input}, expect}, ...]');
  }
  const p = parsed.data;
  const agent = p.agent ?? known.defaultAgent;
  const scope = scopeOf(agent, known);
  if (typeof scope === 'string') return bad(line, p.id, scope, 'name an agent of the directory (kind: Agent) or leave agent out');
  const steps: StepCase[] = [];
  for (const [i, s] of p.steps.entries()) {
    const expect = expectationOf(s.expect, scope);
    if (typeof expect === 'string') return unknownControl(line, p.id, expect, agent, `step ${i + 1}: expect: `);
    steps.push({ kind: 'step', id: `${p.id}#${i + 1}`, line, agent, stage: s.stage, step: s.step, asSelected: false, expect });
  }
  return { case: { kind: 'session', id: p.id, line, agent, steps } };
}

/** A line's expect as scored triggers, or the name of a control outside `scope`. */
function expectationOf(e: ExpectInput, scope: ReadonlySet<string>): Expectation | string {
  const triggers = new Map<string, boolean>();
  if (e.matched !== undefined) {
    const wanted = new Set(e.matched);
    for (const name of wanted) if (!scope.has(name)) return name;
    for (const name of scope) triggers.set(name, wanted.has(name));
  }
  for (const [name, want] of Object.entries(e.triggers ?? {})) {
    if (!scope.has(name)) return name;
    triggers.set(name, want);
  }
  return e.decision === undefined ? { triggers } : { decision: e.decision, triggers };
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

function unknownControl(line: number, id: string, name: string, agent: string | undefined, at = ''): ParsedLine {
  const where = agent === undefined ? 'the directory' : `agent "${agent}"`;
  return bad(line, id, `${at}unknown control "${name}"`, `name a control of ${where}; its controls are what the case is evaluated against`);
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
