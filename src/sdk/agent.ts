/**
 * The object `init()` returns: an agent's controls held in memory, a way to check steps
 * against them, and the background work (refresh, event delivery) that keeps them
 * current. All state lives on the instance.
 */
import { ConnectionError, GuardClient, ResponseShapeError } from '../client/index.js';
import { evaluateStep } from '../engine/index.js';
import { ApiError } from '../errors.js';
import { countsSteps, createDefaultRegistry, type EvaluatorRegistry } from '../evaluators/registry.js';
import { STEP_TYPES, type ControlRecord, type EvaluationResult, type Stage } from '../model/index.js';
import { buildControlSet, type AgentControlSet } from './control-set.js';
import { ApprovalError, ControlSteerError, ControlViolationError, GuardUnavailableError, stepRefusalOf } from './errors.js';
import { EventThreadSink } from './event-thread.js';
import { EventBatcher, eventJsonOf, type EventSink } from './events.js';
import { NonMatchTally } from './non-match-tally.js';
import { decidingMatch, emptyResult, mergeResults } from './merge.js';
import { MissingSelectorWarnings } from './missing-selectors.js';
import { approvalErrorOf, awaitDecision, type ApprovalMode } from './approval-wait.js';
import { approvalTextOf, DISCLOSURES, unavailableVerdict, verdictOf, type Disclosure, type Verdict } from './verdict.js';
import { endEvaluationSpan } from '../tracing/evaluation-span.js';
import { AgentTracing, freshTraceIds, traceparentOfIds, type TraceIds } from './tracing.js';
import { consoleLogger, type CheckOptions, type ControlOptions, type FailMode, type GuardAgentOptions, type GuardLogger, type StepInput } from './options.js';
import { isValidSessionId } from '../model/index.js';

export { consoleLogger } from './options.js';
export type { CheckOptions, ControlOptions, FailMode, GuardAgentOptions, GuardLogger, StepInput } from './options.js';

/** What the agent knows of an evaluator (GuardAgent.evaluatorKind). */
export type EvaluatorKind = 'stateless' | 'counting' | 'unknown';

/** How long a failed read of the server's evaluators is answered from its failure (learnServerEvaluators). */
export const LEARN_RETRY_MS = 10_000;

export class GuardAgent {
  readonly agentName: string;
  readonly client: GuardClient;
  readonly failMode: FailMode;
  readonly disclosure: Disclosure;
  /** The default session of this agent's checks (GuardAgentOptions.sessionId). */
  readonly sessionId: string | undefined;
  readonly approvalMode: ApprovalMode;
  readonly #approvalTimeoutMs: number;
  readonly #registry: EvaluatorRegistry;
  readonly #logger: GuardLogger;
  readonly #refreshMs: number;
  readonly #events: EventBatcher | null;
  /** The non-matches of this agent's checks, sent rolled up with each flush. */
  readonly #tally: NonMatchTally | null;
  readonly #eventThread: EventThreadSink | null;
  readonly #missing: MissingSelectorWarnings;
  readonly #tracing: AgentTracing;
  #set: AgentControlSet;
  #refreshTimer: NodeJS.Timeout | null = null;
  #closed = false;
  #lastRefreshError: unknown = null;
  /** What the server said of its evaluators (learnServerEvaluators); null until it did. */
  #serverKinds: ReadonlyMap<string, EvaluatorKind> | null = null;
  #learning: Promise<void> | null = null;
  #kindsVersion = 0;

  /**
   * Builds an agent from options and, optionally, records already in hand (tests and
   * benchmarks). Most callers use `init()`, which registers and loads from the server.
   */
  constructor(options: GuardAgentOptions, records: readonly ControlRecord[] = []) {
    this.agentName = options.agentName.trim().toLowerCase();
    this.client = new GuardClient({
      serverUrl: options.serverUrl,
      apiKey: options.apiKey,
      timeoutMs: options.timeoutMs,
      fetch: options.fetch,
    });
    this.failMode = options.failMode ?? 'closed';
    this.disclosure = options.disclosure ?? 'minimal';
    this.sessionId = sessionIdOf(options.sessionId);
    if (!DISCLOSURES.includes(this.disclosure)) {
      throw new TypeError(`disclosure must be one of ${DISCLOSURES.join(', ')}, not ${JSON.stringify(options.disclosure)}`);
    }
    this.approvalMode = options.approval ?? 'wait';
    if (this.approvalMode !== 'wait' && this.approvalMode !== 'throw') throw new TypeError(`approval must be "wait" or "throw", not ${JSON.stringify(options.approval)}`);
    this.#approvalTimeoutMs = options.approvalTimeout ?? Number.POSITIVE_INFINITY;
    this.#registry = options.registry ?? createDefaultRegistry();
    this.#logger = options.logger ?? consoleLogger;
    this.#missing = new MissingSelectorWarnings(this.#logger);
    this.#tracing = new AgentTracing(options.tracer);
    this.#refreshMs = Math.max(0, (options.refreshIntervalSeconds ?? 60) * 1000);
    this.#set = this.#build(records);
    this.#eventThread =
      options.events !== false && options.eventThread === true && options.fetch === undefined
        ? new EventThreadSink({ url: `${this.client.serverUrl}/api/v1/observability/events`, apiKey: options.apiKey, timeoutMs: this.client.timeoutMs })
        : null;
    const sink: EventSink = this.#eventThread ?? this.client;
    this.#tally = options.events === false ? null : new NonMatchTally();
    const tally = this.#tally;
    this.#events =
      options.events === false
        ? null
        : new EventBatcher(sink, {
            takeRolledUp: () => tally!.drain(),
            batchSize: options.eventBatchSize ?? 100,
            intervalMs: (options.eventFlushIntervalSeconds ?? 5) * 1000,
            maxBuffered: options.maxBufferedEvents ?? 10_000,
            onError: (error, pending) =>
              this.#logger.warn(`could not send events (${pending} kept for retry): ${messageOf(error)}`),
            onRefused: (error, refused) =>
              this.#logger.warn(`the server refused ${refused} event${refused === 1 ? '' : 's'} as invalid; they were let go and the rest sent: ${messageOf(error)}`),
          });
  }

  /** The controls currently in force. */
  get controls(): readonly ControlRecord[] {
    return this.#set.records;
  }

  /**
   * What is known of evaluator `name`: `stateless` (its verdict is a function of the value
   * selected), `counting` (its definition declares `stateful` or `perSession`: its verdict
   * depends on the steps checked before), or `unknown`. This agent's registry says it of
   * its evaluators, the server (learnServerEvaluators) of its plugins; of any other, nothing
   * is known: it may count, and read the whole step its check is given.
   */
  evaluatorKind(name: string): EvaluatorKind {
    const def = this.#registry.get(name);
    if (def === undefined) return this.#serverKinds?.get(name) ?? 'unknown';
    return countsSteps(def) ? 'counting' : 'stateless';
  }

  /**
   * Reads which of the server's evaluators count (GET /evaluators), for evaluatorKind, once;
   * later calls share the first's answer. Rejects when the server cannot tell (then its
   * plugins stay `unknown`); a call LEARN_RETRY_MS after the failure asks again, one before
   * it gets the same failure at once: each session of an HTTP gateway asks as it starts,
   * and a guard server that hangs held every new session for the client's timeout.
   */
  learnServerEvaluators(): Promise<void> {
    this.#learning ??= this.client.listEvaluators().then(
      (list) => this.#learnKinds(list),
      (error: unknown) => {
        const failed = this.#learning;
        const retry = setTimeout(() => {
          if (this.#learning === failed) this.#learning = null;
        }, LEARN_RETRY_MS);
        retry.unref();
        throw error;
      },
    );
    return this.#learning;
  }

  /** Bumped whenever what evaluatorKind answers of the server's plugins changes: what was derived from it is stale. */
  get evaluatorKindsVersion(): number {
    return this.#kindsVersion;
  }

  #learnKinds(list: ReadonlyArray<{ name: string; counts?: boolean | undefined }>): void {
    const kinds = new Map(list.flatMap((e) => (e.counts === undefined ? [] : [[e.name, e.counts ? 'counting' : 'stateless'] as const])));
    const before = this.#serverKinds;
    if (before !== null && before.size === kinds.size && [...kinds].every(([name, kind]) => before.get(name) === kind)) return;
    this.#serverKinds = kinds;
    this.#kindsVersion++;
  }

  /**
   * Reads the server's evaluators again (after each refresh, once they were learned): a guard
   * server restarted with other plugins may count where it did not. A failure keeps what was known.
   */
  async #relearn(): Promise<void> {
    try {
      this.#learnKinds(await this.client.listEvaluators());
    } catch {
      // The next refresh asks again.
    }
  }

  /** The error of the last failed refresh, null after a successful one. */
  get lastRefreshError(): unknown {
    return this.#lastRefreshError;
  }

  /** Events waiting to be sent. */
  get pendingEvents(): number {
    // A rollup of non-matches waiting is one event to send.
    return (this.#events?.pending ?? 0) + (this.#tally?.size ?? 0);
  }

  /**
   * Reloads the agent's controls from the server. On failure the previous set stays in
   * force and the error is raised (the background refresh logs it and tries again later).
   */
  async refresh(): Promise<readonly ControlRecord[]> {
    try {
      const { controls, set_revision } = await this.client.getAgentControls(this.agentName);
      this.setControls(controls, set_revision ?? null);
      this.#lastRefreshError = null;
      if (this.#serverKinds !== null) void this.#relearn();
      return controls;
    } catch (error) {
      this.#lastRefreshError = error;
      throw error;
    }
  }

  /**
   * Replaces the control set with records already in hand; `setRevision` is the store
   * revision they were read at, sent with the events of in-process evaluations.
   */
  setControls(records: readonly ControlRecord[], setRevision: number | null = null): void {
    this.#set = this.#build(records, setRevision);
  }

  #build(records: readonly ControlRecord[], setRevision: number | null = null): AgentControlSet {
    const set = buildControlSet(records, this.#registry, setRevision);
    for (const b of set.broken) {
      this.#logger.warn(`control "${b.name}" (execution: sdk) cannot run in this process: ${b.reason}`);
    }
    return set;
  }

  /** Starts the background refresh (init calls it). The timer never keeps the process alive. */
  startRefresh(): void {
    if (this.#refreshMs === 0 || this.#closed || this.#refreshTimer) return;
    const tick = (): void => {
      this.refresh().then(
        () => undefined,
        (error: unknown) => this.#logger.warn(`refresh failed, keeping ${this.#set.records.length} controls: ${messageOf(error)}`),
      ).finally(() => {
        if (!this.#closed) schedule();
      });
    };
    const schedule = (): void => {
      this.#refreshTimer = setTimeout(tick, this.#refreshMs);
      this.#refreshTimer.unref();
    };
    schedule();
  }

  /**
   * Evaluates a step at a stage and returns the merged result without raising on deny
   * or steer. Raises GuardUnavailableError when failMode is `closed` and the step could
   * not be checked.
   */
  async evaluate(given: StepInput, stage: Stage, options: CheckOptions = {}): Promise<EvaluationResult> {
    const sessionId = options.sessionId === undefined ? this.sessionId : sessionIdOf(options.sessionId);
    // JSON has no undefined: a step sent without input would be refused by the server.
    const step: StepInput & { input: unknown } = given.input === undefined ? { ...given, input: null } : (given as StepInput & { input: unknown });
    // Plain-JavaScript callers get a clear error instead of a step that silently matches nothing.
    if (!STEP_TYPES.includes(step.type)) throw new TypeError(`step.type must be one of ${STEP_TYPES.map((t) => `"${t}"`).join(', ')}, not ${JSON.stringify(step.type)}`);
    if (stage !== 'pre' && stage !== 'post') throw new TypeError(`stage must be "pre" or "post", not ${JSON.stringify(stage)}`);
    if (typeof step.name !== 'string' || step.name === '') throw new TypeError('step.name must be a non-empty string');
    const set = this.#set;
    const tracing = this.#tracing;
    const broken = set.broken.find((c) => c.matches(step.type, step.name, stage));
    if (broken) this.#unavailable(`control "${broken.name}" applies to step "${step.name}" but cannot run here: ${broken.reason}`);

    let local = emptyResult();
    const startTime = performance.timeOrigin + performance.now();
    // Started before anything is awaited. Built-in evaluators answer synchronously; only async plugins hand back a promise.
    const pending = set.hasLocal ? evaluateStep(set.compiled, step, stage, { execution: 'sdk', collectExecutions: this.#events !== null || tracing.tracing }) : null;
    const outcome = pending instanceof Promise ? await pending : pending;
    // The first check waits for the optional @opentelemetry/api import. Inside the agent's
    // own span, the check (its events, the server's span) joins that trace.
    const loading = tracing.ready();
    if (loading) await loading;
    const trace = tracing.active();
    let ids: TraceIds | null = trace;
    const executions = outcome?.executions;
    if (outcome) local = outcome.result;
    if (executions && executions.length > 0) {
      const span = tracing.localSpan(startTime);
      if (span) endEvaluationSpan(span, { agent: this.agentName, stage, step, result: local, executions, setRevision: set.setRevision, includeContent: tracing.includeContent });
      if (!this.#closed) {
        const now = Date.now();
        const check = { agentName: this.agentName, stage, stepType: step.type, stepName: step.name, sessionId: sessionId ?? null, setRevision: set.setRevision };
        const single = this.#tally === null ? executions : this.#tally.add(executions, check, now);
        if (single.length > 0) {
          this.#events?.pushJson(
            eventJsonOf(single, { agentName: this.agentName, step, stage, ...(ids ??= freshTraceIds()), timestamp: new Date(now).toISOString(), setRevision: set.setRevision, sessionId: sessionId ?? null }),
          );
        }
      }
    }

    // A local deny already decides; otherwise ask the server only when one of its controls is in scope.
    let remote: EvaluationResult | null = null;
    if (local.decision !== 'deny' && set.server.some((c) => c.matches(step.type, step.name, stage))) {
      try {
        remote = await this.client.evaluate(
          sessionId === undefined ? { agent_name: this.agentName, stage, step } : { agent_name: this.agentName, stage, step, session_id: sessionId },
          // The server's events for this step share the trace id of the local ones.
          { headers: trace?.headers ?? { traceparent: traceparentOfIds(ids ?? freshTraceIds()) } },
        );
      } catch (error) {
        if (!(error instanceof ConnectionError || error instanceof ResponseShapeError || error instanceof ApiError)) {
          throw error;
        }
        const refusal = stepRefusalOf(error, `step "${step.name}" (${stage})`);
        if (refusal) throw refusal;
        this.#unavailable(`server check of step "${step.name}" (${stage}) failed: ${error.message}`, error);
      }
    }
    const result = mergeResults(local, remote);
    this.#missing.note(result, step.name, stage, set.records);
    return result;
  }

  /**
   * Checks a step at a stage and says what to do, without raising on deny, steer or an
   * unreachable server: adapters answer the model with `message` instead of throwing
   * through the framework. When the step could not be checked, failMode `closed` gives a
   * deny verdict with `unavailable: true` (`open` logs and allows). warn and log matches
   * are logged. Raises only on invalid arguments.
   */
  async verdict(step: StepInput, stage: Stage, options: CheckOptions = {}): Promise<Verdict> {
    let result: EvaluationResult;
    try {
      result = await this.evaluate(step, stage, options);
    } catch (error) {
      if (!(error instanceof GuardUnavailableError)) throw error;
      const verdict = unavailableVerdict(stage);
      verdict.error = new GuardUnavailableError(verdict.message!, { cause: error });
      return verdict;
    }
    this.#logMatches(result, step, stage);
    return this.#verdictOf(result, stage);
  }

  /**
   * Checks a step at a stage: returns the result when the step may go on, raises
   * ControlViolationError on deny and ControlSteerError on steer (their messages are the
   * verdict's model text). warn and log matches are logged.
   */
  async check(step: StepInput, stage: Stage, options: CheckOptions = {}): Promise<EvaluationResult> {
    const result = await this.evaluate(step, stage, options);
    try {
      this.#enforce(result, step, stage);
    } catch (error) {
      if (!(error instanceof ApprovalError) || error.status !== 'pending' || this.approvalMode === 'throw') throw error;
      const decided = await awaitDecision(this.client, error, this.#approvalTimeoutMs);
      if (decided?.status !== 'approved') throw approvalErrorOf(error, decided);
      // Submitted again: the server lets exactly this step through once on its approval.
      const again = await this.evaluate(step, stage, options);
      this.#enforce(again, step, stage);
      return again;
    }
    return result;
  }

  /**
   * For adapters: a verdict of `ask` waited on as `check` waits (approval mode `wait`):
   * the verdict of the step submitted again once approved, or the same verdict with the
   * ApprovalError of a denial, an expiry or the end of `approvalTimeout`. Other verdicts,
   * and every verdict in mode `throw`, come back unchanged.
   */
  async awaitApproval(step: StepInput, stage: Stage, verdict: Verdict, options: CheckOptions = {}): Promise<Verdict> {
    const pending = verdict.error;
    if (verdict.decision !== 'ask' || !(pending instanceof ApprovalError) || pending.status !== 'pending' || this.approvalMode === 'throw') return verdict;
    const decided = await awaitDecision(this.client, pending, this.#approvalTimeoutMs);
    if (decided?.status !== 'approved') return { ...verdict, error: approvalErrorOf(pending, decided) };
    return this.verdict(step, stage, options);
  }

  /**
   * Wraps an async function as a checked step: `pre` on its input before it runs, `post`
   * on its output after. The input is the first argument unless `options.input` picks it
   * out of the arguments. The function receives its arguments unchanged.
   */
  control<A extends unknown[], R>(
    fn: (...args: A) => Promise<R> | R,
    options: ControlOptions<A>,
  ): (...args: A) => Promise<R> {
    const name = options.stepName ?? fn.name;
    if (!name) throw new TypeError('control(): give options.stepName (the function has no name)');
    const type = options.type;
    const contextOf = options.context;
    const inputOf = options.input ?? ((...args: A): unknown => args[0]);
    return async (...args: A): Promise<R> => {
      const input = inputOf(...args);
      const context = typeof contextOf === 'function' ? contextOf() : contextOf;
      const step: StepInput = context ? { type, name, input, context } : { type, name, input };
      const session = typeof options.sessionId === 'function' ? options.sessionId() : options.sessionId;
      const checkOptions: CheckOptions = session === undefined ? {} : { sessionId: session };
      await this.check(step, 'pre', checkOptions);
      const output = await fn(...args);
      await this.check({ ...step, output }, 'post', checkOptions);
      return output;
    };
  }

  /** Sends the events still queued. */
  async flushEvents(): Promise<void> {
    await this.#events?.flush();
  }

  /** Stops the background refresh and sends the queued events. Safe to call twice. */
  async shutdown(): Promise<void> {
    if (this.#refreshTimer) clearTimeout(this.#refreshTimer);
    this.#refreshTimer = null;
    if (this.#closed) return;
    this.#closed = true;
    await this.#events?.close();
    await this.#eventThread?.close();
    const pending = this.#events?.pending ?? 0;
    if (pending > 0) this.#logger.warn(`shutdown: ${pending} events could not be sent`);
  }

  #unavailable(message: string, cause?: unknown): void {
    if (this.failMode === 'closed') throw new GuardUnavailableError(message, { cause });
    this.#logger.warn(`${message}; failMode is open, so the step goes on`);
  }

  #logMatches(result: EvaluationResult, step: StepInput, stage: Stage): void {
    for (const m of result.matches) {
      if (m.action === 'warn' || m.action === 'log') {
        const text = `control "${m.control_name}" matched step "${step.name}" (${stage})${m.result.message ? `: ${m.result.message}` : ''}`;
        if (m.action === 'warn') this.#logger.warn(text);
        else this.#logger.info(text);
      }
    }
  }

  #enforce(result: EvaluationResult, step: StepInput, stage: Stage): void {
    this.#logMatches(result, step, stage);
    const { error } = this.#verdictOf(result, stage);
    if (error) throw error;
  }

  /** The verdict of a result, with the error `check` raises for it. */
  #verdictOf(result: EvaluationResult, stage: Stage): Verdict {
    const verdict = verdictOf(result, stage, this.disclosure);
    if (verdict.decision === 'allow') return verdict;
    const decider = decidingMatch(result);
    const metadata = decider ? (this.#set.actionMetadata.get(decider.control_id) ?? null) : null;
    const text = verdict.message!;
    const approval = verdict.approval;
    if (approval !== undefined && verdict.decision !== 'steer') {
      // Ask (pending), or a denied or expired approval: an approval error, never a violation.
      verdict.error = new ApprovalError(approval.id, approval.status, approval.expires_at, approval.reason ?? null, result, approvalTextOf(approval, text));
      return verdict;
    }
    // An ask without an approval (a server that cannot store one) is refused, never run.
    verdict.error =
      verdict.decision === 'deny' || verdict.decision === 'ask'
        ? new ControlViolationError(decider?.control_id ?? -1, verdict.control_name ?? 'unknown', verdict.detail, metadata, result, text)
        : new ControlSteerError(decider?.control_id ?? null, verdict.control_name, verdict.steering_context!, metadata, result, text);
    return verdict;
  }
}

/** A session id as the server takes it (docs/sessions.md); a plain-JavaScript caller's mistake is a TypeError, never a step sent without its session. */
function sessionIdOf(id: unknown): string | undefined {
  if (id === undefined) return undefined;
  if (!isValidSessionId(id)) throw new TypeError('sessionId must be 1-128 characters of printable, well-formed text (no NUL or control character), and not "." or ".."');
  return id;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
