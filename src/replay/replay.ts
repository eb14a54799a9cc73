/**
 * PURE: re-evaluates recorded steps against two sets of compiled controls per agent, the
 * server's current ones (`before`) and the directory's (`after`), and counts how decisions
 * change. A record that no longer fits the model is counted and skipped, never fatal.
 */
import { MemoryCounters, type Counters } from '../counting/index.js';
import { sensitiveExcerpt } from '../evaluators/sensitive.js';
import { EMPTY_CONTROL_SET, evaluateStep, sessionOutcome, type CompiledControlSet, type EvaluateOptions, type EvaluationOutcome } from '../engine/index.js';
import { EvaluationRequestSchema, fieldIssuesOf, type EvaluationResult, type Stage, type Step } from '../model/index.js';
import { maskSelected } from '../observability/shadow-examples.js';
import type { Redactor } from '../recording/redact.js';
import { stepRedactor } from '../recording/value-masks.js';
import type { AgentSets } from '../testing/agent-sets.js';
import type { RawRecord, ReplayChange, ReplayDecision, ReplayReport } from './types.js';

export interface ReplayOptions {
  /** Examples kept per kind of change. */
  examples?: number;
  /** Warnings kept (the count of skipped records is always exact). */
  maxWarnings?: number;
  source?: string;
  /**
   * Controls both sides hold unchanged (see sides.ts): evaluated once per step, their matches
   * count on both sides; `before` and `after` then hold only the controls that differ.
   */
  common?: AgentSets;
  /** Skips found by the source itself (lines that are not JSON), already counted there. */
  sourceSkipped?: { count: number; warnings: string[] };
}

const EXCERPT = 120;
// Recordings are of server evaluations, so only server-side controls take part.
const SERVER = { execution: 'server' } as const;

export async function replay(
  records: Iterable<RawRecord>,
  before: AgentSets,
  after: AgentSets,
  options: ReplayOptions = {},
): Promise<ReplayReport> {
  const maxExamples = options.examples ?? 3;
  const maxWarnings = options.maxWarnings ?? 20;
  const warnings = [...(options.sourceSkipped?.warnings ?? [])].slice(0, maxWarnings);
  let skipped = options.sourceSkipped?.count ?? 0;
  let total = skipped;
  let evaluated = 0;
  const unchanged: Record<ReplayDecision, number> = { allow: 0, deny: 0, steer: 0, ask: 0 };
  const changes = new Map<string, ReplayChange>();
  // Recorded steps were redacted when recorded; a JSON-lines file may not have been.
  const redactor = stepRedactor([]);
  // Recorded sessions replay in order, each side keeping its own labels (docs/sessions.md).
  const labels = { before: new Map<string, Set<string>>(), after: new Map<string, Set<string>>() };
  // Rate, budget and repeat controls count the replayed steps, each side in counters of its
  // own (the sides' control ids overlap), at the time each step was recorded; steps without
  // one (a file's) count at one instant, as a test document's cases do. Without
  // counters such a control fails to evaluate, and its fail-closed error denied every step.
  let clock = 0;
  const now = () => clock;
  const counters = {
    commonBefore: new MemoryCounters({ now }),
    commonAfter: new MemoryCounters({ now }),
    before: new MemoryCounters({ now }),
    after: new MemoryCounters({ now }),
  };

  for (const record of records) {
    total++;
    const parsed = EvaluationRequestSchema.safeParse(record.value);
    if (!parsed.success) {
      skipped++;
      if (warnings.length < maxWarnings) {
        const issue = fieldIssuesOf(parsed.error)[0];
        warnings.push(`${record.label}: skipped, it no longer fits the step model (${issue ? `${issue.field || '(record)'}: ${issue.message}` : 'invalid'})`);
      }
      continue;
    }
    const { agent_name, stage, step, session_id } = parsed.data;
    if (record.at !== undefined) clock = record.at;
    let was: Verdict;
    let now: Verdict;
    try {
      if (session_id !== undefined) {
        const key = `${agent_name}\u0000${session_id}`;
        was = await sessionSide(labels.before, key, session_id, [options.common, before], [counters.commonBefore, counters.before], agent_name, step, stage);
        now = await sessionSide(labels.after, key, session_id, [options.common, after], [counters.commonAfter, counters.after], agent_name, step, stage);
      } else {
        // Awaited only when an evaluator went asynchronous: the common case costs no microtask.
        let sharedBefore: EvaluationResult | null = null;
        let sharedAfter: EvaluationResult | null = null;
        if (options.common) {
          const set = setOf(options.common, agent_name);
          const c = resultOf(evaluateStep(set, step, stage, serverOptions(agent_name, counters.commonBefore)));
          sharedBefore = sharedAfter = c instanceof Promise ? await c : c;
          // Counting controls count on each side: a session's steps may have reached them on one side only.
          if (set.counting) {
            const d = resultOf(evaluateStep(set, step, stage, serverOptions(agent_name, counters.commonAfter)));
            sharedAfter = d instanceof Promise ? await d : d;
          }
        }
        const a = resultOf(evaluateStep(setOf(before, agent_name), step, stage, serverOptions(agent_name, counters.before)));
        was = verdictOf(sharedBefore, a instanceof Promise ? await a : a);
        const b = resultOf(evaluateStep(setOf(after, agent_name), step, stage, serverOptions(agent_name, counters.after)));
        now = verdictOf(sharedAfter, b instanceof Promise ? await b : b);
      }
    } catch (error) {
      skipped++;
      if (warnings.length < maxWarnings) warnings.push(`${record.label}: skipped, evaluating it failed (${error instanceof Error ? error.message : String(error)})`);
      continue;
    }
    evaluated++;
    if (was.decision === now.decision) {
      unchanged[was.decision]++;
      continue;
    }
    const key = `${was.decision}>${now.decision}`;
    let change = changes.get(key);
    if (!change) {
      change = { from: was.decision, to: now.decision, count: 0, controls: {}, examples: [] };
      changes.set(key, change);
    }
    change.count++;
    const responsible = now.decision === 'allow' ? was.deciding : now.deciding;
    for (const name of responsible) change.controls[name] = (change.controls[name] ?? 0) + 1;
    if (change.examples.length < maxExamples) {
      change.examples.push({
        label: record.label,
        agent_name,
        stage,
        step_type: step.type,
        step_name: step.name,
        input_excerpt: await maskedExcerpt(step, stage, [options.common, before, after], agent_name, redactor),
        controls: responsible,
      });
    }
  }

  return {
    total,
    evaluated,
    skipped,
    warnings,
    changes: [...changes.values()].sort((a, b) => b.count - a.count || order(a) - order(b)),
    unchanged,
    source: options.source ?? 'recordings',
  };
}

/**
 * One side's verdict on a step of a recorded session: the side's controls (the common ones
 * and its own) see the labels this side's earlier steps of the session added, and what
 * they add now is kept for the session's next step.
 */
async function sessionSide(
  sessions: Map<string, Set<string>>,
  key: string,
  id: string,
  sides: ReadonlyArray<AgentSets | undefined>,
  counters: readonly Counters[],
  agent: string,
  step: Step,
  stage: Stage,
): Promise<Verdict> {
  const held = sessions.get(key) ?? new Set<string>();
  const session = { id, labels: held };
  const results: EvaluationResult[] = [];
  const added: string[] = [];
  for (const [i, sets] of sides.entries()) {
    if (sets === undefined) continue;
    const set = setOf(sets, agent);
    const options: EvaluateOptions = { execution: 'server', agentName: agent, counters: counters[i]!, session };
    const pending = resultOf(evaluateStep(set, step, stage, options));
    const result = pending instanceof Promise ? await pending : pending;
    results.push(result);
    for (const label of sessionOutcome(result, set, session).added) added.push(label.label);
  }
  sessions.set(key, new Set([...held, ...added]));
  return results.length === 2 ? verdictOf(results[0]!, results[1]!) : verdictOf(null, results[0]!);
}

function serverOptions(agentName: string, counters: Counters): EvaluateOptions {
  return { execution: 'server', agentName, counters };
}

function setOf(sets: AgentSets, agent: string): CompiledControlSet {
  return sets.get(agent) ?? EMPTY_CONTROL_SET;
}

function resultOf(pending: EvaluationOutcome | Promise<EvaluationOutcome>): EvaluationResult | Promise<EvaluationResult> {
  return pending instanceof Promise ? pending.then((o) => o.result) : pending.result;
}

const PRIORITY: Record<ReplayDecision, number> = { allow: 0, ask: 1, steer: 2, deny: 3 };

interface Verdict {
  decision: ReplayDecision;
  /** The controls behind a deny or steer decision. */
  deciding: string[];
}

/** SPEC's priority over the shared matches plus one side's: deny wins, then steer, then ask. */
function verdictOf(shared: EvaluationResult | null, side: EvaluationResult): Verdict {
  const decision: ReplayDecision =
    shared === null || PRIORITY[side.decision] >= PRIORITY[shared.decision] ? side.decision : shared.decision;
  if (decision === 'allow') return { decision, deciding: [] };
  const names: string[] = [];
  for (const m of shared?.matches ?? []) if (m.action === decision) names.push(m.control_name);
  for (const m of side.matches) if (m.action === decision) names.push(m.control_name);
  // Sorted, so the split into shared and side controls never shows in the output.
  return { decision, deciding: names.sort() };
}

const RANK: Record<ReplayDecision, number> = { deny: 0, steer: 1, ask: 2, allow: 3 };
function order(c: ReplayChange): number {
  return RANK[c.to] * 4 + RANK[c.from];
}

/**
 * The example's input as the report shows it: every value a control that matched the step
 * read (on either side) replaced by `[MATCHED]`, as in the shadow report, then redacted as
 * recorded steps are. A report must not repeat what the controls guard. Only examples
 * pay for this second evaluation, a few per kind of change.
 */
async function maskedExcerpt(step: Step, stage: Stage, sides: ReadonlyArray<AgentSets | undefined>, agent: string, redactor: Redactor): Promise<string> {
  const paths: string[] = [];
  for (const sets of sides) {
    if (!sets) continue;
    const pending = evaluateStep(setOf(sets, agent), step, stage, { ...SERVER, collectExecutions: true });
    const { executions } = pending instanceof Promise ? await pending : pending;
    for (const e of executions ?? []) if (e.matched) paths.push(...(e.selector_paths ?? [e.selector_path]));
  }
  const masked = maskSelected(step, paths);
  return excerpt(redactor.redact(typeof masked === 'string' ? masked : masked.input));
}

function excerpt(value: unknown): string {
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  } catch {
    text = String(value);
  }
  // The one masking of excerpts: what redaction keeps is still scanned for anything a
  // masking evaluator would find (an SSN or an e-mail address in a field no control read).
  return sensitiveExcerpt(text, { max: EXCERPT });
}

/** "would newly deny 37 of 10,000 steps": one line per change, for every renderer. */
export function describeChange(change: Pick<ReplayChange, 'from' | 'to' | 'count'>, evaluated: number): string {
  const of = `${change.count.toLocaleString('en-US')} of ${evaluated.toLocaleString('en-US')} step${evaluated === 1 ? '' : 's'}`;
  if (change.to === 'deny') return `would newly deny ${of} (${change.from} before)`;
  if (change.to === 'steer') return `would newly steer ${of} (${change.from} before)`;
  if (change.to === 'ask') return `would newly ask for approval of ${of} (${change.from} before)`;
  return `would newly allow ${of} (${change.from} before)`;
}
