/**
 * Evaluates cases with the server's engine in this process: each agent's controls (or,
 * for cases without an agent, every control given) compiled once, each case one
 * evaluateStep with per-control timings. PURE: controls and registry in, results out.
 */
import { compileControls, evaluateStep, sessionOutcome, type CompiledControlSet } from '../engine/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import { MemoryCounters } from '../counting/index.js';
import { sensitiveExcerpt } from '../evaluators/sensitive.js';
import { textOf } from '../evaluators/text.js';
import type { Condition, ControlData } from '../model/index.js';
import type { KnownNames } from './dataset.js';
import type { CaseEvaluator, CaseResult } from './run.js';
import type { StepCase } from './types.js';

/** Characters of a miss's text listed, masked. */
const EXCERPT_MAX = 80;

export interface InProcessInput {
  controls: ReadonlyArray<{ name: string; data: ControlData }>;
  agents: ReadonlyArray<{ agent_name: string; controls: readonly string[] }>;
  registry: EvaluatorRegistry;
  defaultAgent?: string | undefined;
}

export function inProcessEvaluator(input: InProcessInput): CaseEvaluator {
  const byName = new Map(input.controls.map((c, i) => [c.name, { control_id: i + 1, name: c.name, data: c.data }]));
  const agentLinks = new Map(input.agents.map((a) => [a.agent_name, a.controls.filter((n) => byName.has(n))]));
  const known: KnownNames = {
    controls: new Set(byName.keys()),
    agents: new Map([...agentLinks].map(([name, links]) => [name, new Set(links)])),
    defaultAgent: input.defaultAgent,
  };
  const sets = new Map<string, CompiledControlSet>();
  // Rate and budget controls count across the dataset's cases, as steps of one run would.
  const counters = new MemoryCounters();
  const setFor = (agent: string | undefined, asSelected: boolean): CompiledControlSet => {
    const key = `${asSelected ? 'data' : 'step'}\u0000${agent ?? ''}`;
    let set = sets.get(key);
    if (set === undefined) {
      const names = agent === undefined ? [...byName.keys()] : (agentLinks.get(agent.trim().toLowerCase()) ?? []);
      const chosen = names.map((n) => byName.get(n)!).map((c) => (asSelected ? { ...c, data: readingInput(c.data) } : c));
      sets.set(key, (set = compileControls(chosen, input.registry)));
    }
    return set;
  };
  let sessions = 0;
  /** Evaluates `c`, in `session` when given: its labels before the step, updated after. */
  const evaluate = (c: StepCase, session?: { id: string; labels: Set<string> }): CaseResult | Promise<CaseResult> => {
    const set = setFor(c.agent, c.asSelected);
    const agentName = c.agent?.trim().toLowerCase() ?? 'eval';
    const started = performance.now();
    const options = session === undefined ? { collectExecutions: true, agentName, counters } : { collectExecutions: true, agentName, counters, session };
    const pending = evaluateStep(set, c.step, c.stage, options);
    const finish = (outcome: Awaited<typeof pending>): CaseResult => {
      if (session !== undefined) {
        const { result } = sessionOutcome(outcome.result, set, session);
        session.labels = new Set(result.session!.labels);
        outcome = { ...outcome, result };
      }
      const elapsedMs = performance.now() - started;
      const timings = new Map<string, number>();
      const excerpts = new Map<string, string>();
      for (const e of outcome.executions ?? []) {
        timings.set(e.control_name, e.duration_ms);
        if (e.matched && typeof e.excerpt === 'string') excerpts.set(e.control_name, e.excerpt);
      }
      return { result: outcome.result, timings, elapsedMs, excerpts, maskedText: () => sensitiveExcerpt(textOf(c.step.input) ?? '', { max: EXCERPT_MAX }) };
    };
    return pending instanceof Promise ? pending.then(finish) : finish(pending);
  };
  return {
    via: 'in-process',
    known,
    evaluate: (c) => evaluate(c),
    session() {
      // Its own id: `repeat` counts per session in the counters all cases share.
      const session = { id: `eval-session-${++sessions}`, labels: new Set<string>() };
      return { evaluate: (c) => evaluate(c, session) };
    },
  };
}

/**
 * The control as it reads a `data` line: every selector reads `input` (where the line's
 * text is) and the scope is lifted, so the text is what each evaluator is given.
 */
function readingInput(data: ControlData): ControlData {
  const out: ControlData = { ...data, scope: {} };
  if (data.selector !== undefined) out.selector = { ...data.selector, path: 'input' };
  if (data.condition !== undefined) out.condition = conditionReadingInput(data.condition);
  return out;
}

function conditionReadingInput(c: Condition): Condition {
  if ('and' in c) return { and: c.and.map(conditionReadingInput) };
  if ('or' in c) return { or: c.or.map(conditionReadingInput) };
  if ('not' in c) return { not: conditionReadingInput(c.not) };
  return { ...c, selector: { ...c.selector, path: 'input' } };
}
