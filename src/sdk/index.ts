/**
 * `guardctl/sdk`: what an agent imports.
 *
 *   const guard = await init({ agentName: 'support-bot', serverUrl: 'http://127.0.0.1:8000' });
 *   const runSql = guard.control(rawRunSql, { stepName: 'run_sql', type: 'tool' });
 *
 * State lives on the GuardAgent that init returns. The module-level `control()` and
 * `check()` are a convenience bound to the agent of the most recent init.
 */
import type { EvaluationResult, Stage } from '../model/index.js';
import { consoleLogger, GuardAgent, type ControlOptions, type GuardAgentOptions, type StepInput } from './agent.js';
import { controlsBeforeRegistration, selectedByPolicy, enforcingCount, unguardedError } from './unguarded.js';

export { GuardAgent } from './agent.js';
export type { CheckOptions, ControlOptions, EvaluatorKind, FailMode, GuardAgentOptions, GuardLogger, StepInput } from './agent.js';
export { DISCLOSURES, type Disclosure, type Verdict } from './verdict.js';
export type { ApprovalMode } from './approval-wait.js';
// The `tracer` option's type: what of an @opentelemetry/api Tracer the SDK uses.
export type { AttributeValue, Attributes, SpanContextLike, SpanLike, TracerLike } from '../tracing/types.js';
export { ApprovalError, ControlSteerError, ControlViolationError, GuardError, GuardUnavailableError, UnguardedAgentError } from './errors.js';
export { ApiError, UserError, type ProblemBody } from '../errors.js';
// Evaluators for `execution: sdk` controls (the `registry` option), with the plugin interface.
export {
  createDefaultRegistry,
  EvaluatorRegistry,
  type CompiledEvaluator,
  type CompileResult,
  type DefaultRegistryOptions,
  type EvaluatorInfo as RegisteredEvaluator,
} from '../evaluators/registry.js';
export { ConfigError } from '../evaluators/types.js';
export type {
  CompiledCheck,
  EvaluatorDefinition,
  EvaluatorOutcome,
  EvaluatorPlugin,
  PartCache,
  PartCaches,
  ValueMemo,
  StepContext,
  CompileSite,
  Counters,
  CountRequest,
  CountAnswer,
} from '../evaluators/types.js';
export type { CounterKind } from '../counting/index.js';
// Every type a public signature above names, so that callers (and adapters) can name it too.
export * from '../client/index.js';
export type {
  FieldIssue,
  OnError,
  AgentPatch,
  AgentRecord,
  ApprovalRecord,
  ApprovalRef,
  ApprovalStatus,
  PolicyBody,
  PolicyRecord,
  McpDriftReportInput,
  McpServerBody,
  McpServerRecord,
  ControlData,
  ControlDataInput,
  ControlMatch,
  ControlRecord,
  ControlResult,
  Decision,
  EvaluationRequest,
  EvaluationResult,
  JsonObject,
  ObservabilityEvent,
  SessionInfo,
  ShadowReport,
  Stage,
  SteeringContext,
  Step,
  StepDecl,
  StepType,
} from '../model/index.js';

export type InitOptions = GuardAgentOptions;

let defaultAgent: GuardAgent | null = null;

/**
 * Registers the agent (POST /agents/initAgent), loads its controls (GET
 * /agents/{name}/controls) and starts the background refresh. Rejects when the server
 * cannot be reached or refuses the registration: an agent that cannot load its controls
 * does not start unchecked. Rejects with UnguardedAgentError, before registering
 * anything, when no control is in force for the agent, unless `allowUnguarded` is true.
 */
export async function init(options: InitOptions): Promise<GuardAgent> {
  const agent = new GuardAgent(options);
  try {
    await register(agent, options);
  } catch (error) {
    await agent.shutdown();
    throw error;
  }
  agent.startRefresh();
  defaultAgent = agent;
  return agent;
}

async function register(agent: GuardAgent, options: InitOptions): Promise<void> {
  const allowUnguarded = options.allowUnguarded === true;
  if (!allowUnguarded) {
    // Checked before registering: a misspelt name must not leave a new, empty agent behind.
    const before = await controlsBeforeRegistration(agent.client, agent.agentName);
    // An agent whose labels a policy selects is guarded once registered; the check after loading stands.
    const policyWillGuard = options.labels !== undefined && (await selectedByPolicy(agent.client, agent.agentName, options.labels));
    if (!policyWillGuard && (before === null || enforcingCount(before) === 0)) throw await unguardedError(agent.client, agent.agentName, before !== null);
  }
  await agent.client.initAgent({
    agent_name: options.agentName,
    ...(options.agentDescription !== undefined && { agent_description: options.agentDescription }),
    ...(options.agentVersion !== undefined && { agent_version: options.agentVersion }),
    ...(options.agentMetadata !== undefined && { metadata: options.agentMetadata }),
    ...(options.labels !== undefined && { labels: options.labels }),
    ...(options.steps !== undefined && { steps: options.steps }),
    conflict_mode: options.conflictMode ?? 'overwrite',
  });
  await agent.refresh();
  if (enforcingCount(agent.controls) > 0) return;
  // The controls went away between the check and the load.
  if (!allowUnguarded) throw await unguardedError(agent.client, agent.agentName, true);
  (options.logger ?? consoleLogger).warn(
    `agent ${JSON.stringify(agent.agentName)} has no controls in force: every step runs unchecked until controls are linked to it (allowUnguarded is true)`,
  );
}

function current(): GuardAgent {
  if (!defaultAgent) throw new Error('guardctl/sdk: call init() first');
  return defaultAgent;
}

/** `agent.control` of the most recent init. */
export function control<A extends unknown[], R>(
  fn: (...args: A) => Promise<R> | R,
  options: ControlOptions<A>,
): (...args: A) => Promise<R> {
  // Resolved per call so that wrapping may happen before init at module load.
  return (...args: A) => current().control(fn, options)(...args);
}

/** `agent.check` of the most recent init. */
export function check(step: StepInput, stage: Stage): Promise<EvaluationResult> {
  return current().check(step, stage);
}

/** Shuts down the agent of the most recent init and forgets it. */
export async function shutdown(): Promise<void> {
  const agent = defaultAgent;
  defaultAgent = null;
  await agent?.shutdown();
}
