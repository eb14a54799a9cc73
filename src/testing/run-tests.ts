/**
 * Runs decision tests offline with the server's engine: each agent's linked controls are
 * compiled once, every case is one `evaluateStep`. PURE (no fs, no network).
 */
import { evaluateStep, sessionOutcome, type CompiledControlSet } from '../engine/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import { MemoryCounters } from '../counting/index.js';
import { sortDiagnostics } from '../gitops/diagnostics.js';
import type { LoadedTest } from '../gitops/load.js';
import { selectsAgent, type AgentSelector, type ControlData, type EvaluationResult, type Labels } from '../model/index.js';
import { compileAgentSets, type AgentLinks } from './agent-sets.js';
import { checkTests, type RunnableCase } from './check-tests.js';
import type { CaseOutcome, TestRunReport } from './types.js';

export interface TestRunInput {
  directory: string;
  controls: ReadonlyArray<{ name: string; data: ControlData }>;
  agents: ReadonlyArray<AgentLinks & { document?: { labels?: Labels | undefined } }>;
  /** The directory's policies: an agent runs its links and the controls of every policy selecting it. */
  policies?: ReadonlyArray<{ document: { controls: readonly string[]; agents: AgentSelector } }>;
  tests: readonly LoadedTest[];
  registry: EvaluatorRegistry;
}

export async function runTests(input: TestRunInput): Promise<TestRunReport> {
  const policies = input.policies ?? [];
  const guarded = (name: string, labels: Labels, links: readonly string[]) => [
    ...links,
    ...policies.filter((p) => selectsAgent(p.document.agents, name, labels)).flatMap((p) => p.document.controls),
  ];
  const effective: AgentLinks[] = input.agents.map((a) => ({ agent_name: a.agent_name, controls: guarded(a.agent_name, a.document?.labels ?? {}, a.controls) }));
  const agents = new Map(effective.map((a) => [a.agent_name, new Set(a.controls)]));
  // Unnamed agents of `agent_labels`: keyed by their labels, guarded by policies alone.
  const byLabels = (labels: Labels) => {
    const key = `labels:${JSON.stringify(Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1))))}`;
    if (!agents.has(key)) {
      const controls = guarded('', labels, []);
      effective.push({ agent_name: key, controls });
      agents.set(key, new Set(controls));
    }
    return { key, controls: agents.get(key)! };
  };
  const checked = checkTests(input.tests, { agents, controls: new Set(input.controls.map((c) => c.name)), byLabels });
  const sets = compileAgentSets(input.controls, effective, input.registry);

  const outcomes: CaseOutcome[] = [];
  const exercised = new Set<string>();
  // Rate and budget controls count in counters of their own per test document, all its
  // cases at one instant: a document's cases are successive steps within every window.
  const counters = new Map<number, MemoryCounters>();
  const instant = Date.now();
  // The labels of each multi-step case's session, which starts empty (check-tests.ts).
  const sessions = new Map<string, ReadonlySet<string>>();
  for (const runnable of checked.cases) {
    const set = sets.get(runnable.agent) as CompiledControlSet;
    const { testCase } = runnable;
    let documentCounters = counters.get(runnable.document);
    if (documentCounters === undefined) counters.set(runnable.document, (documentCounters = new MemoryCounters({ now: () => instant })));
    // Every control takes part (server and sdk execution): a test asks what the agent ends up with.
    const session = runnable.session === undefined ? undefined : { id: runnable.session, labels: sessions.get(runnable.session) ?? new Set<string>() };
    const pending = evaluateStep(set, testCase.step, testCase.stage, { agentName: runnable.agent, counters: documentCounters, ...(session ? { session } : {}) });
    let { result } = pending instanceof Promise ? await pending : pending;
    if (session !== undefined) {
      result = sessionOutcome(result, set, session).result;
      sessions.set(session.id, new Set(result.session!.labels));
    }
    for (const m of result.matches) exercised.add(m.control_name);
    outcomes.push(outcomeOf(runnable, result));
  }

  const enabled = input.controls.filter((c) => c.data.enabled !== false).map((c) => c.name).sort();
  const failed = outcomes.filter((o) => !o.passed).length;
  const diagnostics = sortDiagnostics(checked.diagnostics);
  return {
    directory: input.directory,
    cases: outcomes,
    diagnostics,
    coverage: {
      total: enabled.length,
      exercised: enabled.filter((n) => exercised.has(n)),
      unexercised: enabled.filter((n) => !exercised.has(n)),
    },
    summary: {
      documents: checked.documents,
      total: outcomes.length,
      passed: outcomes.length - failed,
      failed,
      invalid: diagnostics.filter((d) => d.severity === 'error').length,
    },
  };
}

function outcomeOf(runnable: RunnableCase, result: EvaluationResult): CaseOutcome {
  const { testCase } = runnable;
  const matched = result.matches.map((m) => m.control_name);
  const matchedSet = new Set(matched);
  const expectMatched = testCase.expect.matched ?? [];
  const expectNot = testCase.expect.not_matched ?? [];
  const missing = expectMatched.filter((n) => !matchedSet.has(n));
  const unexpected = expectNot.filter((n) => matchedSet.has(n));
  const decidingAction = result.decision === 'allow' ? null : result.decision;
  return {
    test: runnable.test,
    case: testCase.name,
    agent: runnable.agent,
    stage: testCase.stage,
    step_type: testCase.step.type,
    step_name: testCase.step.name,
    file: runnable.file,
    line: runnable.line,
    column: runnable.column,
    passed: result.decision === testCase.expect.decision && missing.length === 0 && unexpected.length === 0,
    expected: { decision: testCase.expect.decision, matched: expectMatched, not_matched: expectNot },
    actual: {
      decision: result.decision,
      matched,
      deciding: decidingAction === null ? [] : result.matches.filter((m) => m.action === decidingAction).map((m) => m.control_name),
      errors: result.errors.map((m) => m.control_name),
    },
    missing_matched: missing,
    unexpected_matched: unexpected,
  };
}
