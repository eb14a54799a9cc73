import type { ObservabilityEvent, ReloadNotice, StoredEvent } from '../model/index.js';
import { isoOfEpochMs } from '../model/iso-time.js';
import { StoreError, type Store } from '../store/types.js';
import { OBSERVABILITY_DEFAULTS, type ObservabilityConfig } from './config.js';
import { EventBuffer, isUrgentEvent } from './event-buffer.js';
import { createEventHub, type EventHub } from './event-hub.js';
import { defaultWorkerUrl, inlineWriter, workerWriter, type EventWriter } from './event-writer.js';
import { createMetrics, type GuardMetrics } from './metrics.js';
import { NonMatchRollups } from './non-match-rollups.js';
import { SelectorMissingReporter, UnguardedReporter } from './selector-missing.js';
import { eventOf, executionsOf, isNonMatch, metadataByControl, summaryOf, type RecordEvaluationInput } from './record.js';
import { createExampleTaker } from './shadow-examples.js';
import type { TraceIds } from './trace.js';

export type { RecordEvaluationInput } from './record.js';

/** The subset of a pino/Fastify logger observability uses. */
export interface ObservabilityLogger {
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface Observability {
  /** OBSERVABILITY_ENABLED: whether events are stored. */
  readonly enabled: boolean;
  readonly metrics: GuardMetrics;
  readonly hub: EventHub;
  readonly buffer: EventBuffer;
  /** Non-matches counted per minute until the next flush (see non-match-rollups.ts). */
  readonly rollups: NonMatchRollups;
  /** Where flushed events go: `inline` (the store) or `worker` (a writer thread). */
  readonly writerKind: EventWriter['kind'];
  /**
   * Queues an evaluation to be recorded: never throws and never waits on I/O. The queue is
   * recorded once per event-loop turn (see `settle`).
   */
  recordEvaluation(input: RecordEvaluationInput): void;
  /**
   * Records every queued evaluation now. Readers that must see each answered evaluation
   * (a metrics scrape, flush, close) call it first.
   */
  settle(): void;
  ingest(events: ObservabilityEvent[]): { received: number; enqueued: number; dropped: number };
  publishReload(notice: ReloadNotice): void;
  /** Starts the flush and retention timers (unref'd) and prunes once. */
  start(): void;
  /** Writes buffered events and rollups now. */
  flush(): Promise<void>;
  /** Stops the timers, ends live streams and flushes what is buffered. Idempotent. */
  close(): Promise<void>;
  /** Deletes events older than the retention; returns how many. */
  prune(now?: number): Promise<number>;
}

export interface CreateObservabilityOptions {
  store: Store;
  config: ObservabilityConfig;
  logger?: ObservabilityLogger;
  /** Process metrics (default true); tests building many apps may turn them off. */
  processMetrics?: boolean;
  /**
   * The SQLite file of `store`. When set, events are written by a worker thread with its
   * own connection (see event-writer.ts), so inserts never pause request handling.
   */
  sqlitePath?: string;
  /** The compiled worker module; defaults to the one beside this file when it exists. */
  workerUrl?: URL | null;
  /** Redaction rules for shadow-report examples beyond the built-in ones (GUARD_RECORD_REDACT). */
  exampleRedact?: readonly string[];
  /** Live stream tuning, mostly for tests. */
  stream?: { queueSize?: number; stallMs?: number; heartbeatMs?: number; maxSubscribers?: number };
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Evaluations queued in one event-loop turn before they are recorded anyway. */
const MAX_PENDING = 256;
/** Events waiting before they are handed to the writer thread without waiting for the timer. */
const THREAD_HANDOVER_EVENTS = 64;

export function createObservability(opts: CreateObservabilityOptions): Observability {
  const { store, config, logger } = opts;
  const enabled = config.observabilityEnabled;
  const hub = createEventHub({
    heartbeatMs: opts.stream?.heartbeatMs ?? (config.streamHeartbeatSeconds ?? OBSERVABILITY_DEFAULTS.streamHeartbeatSeconds) * 1000,
    maxSubscribers: opts.stream?.maxSubscribers ?? config.streamMaxSubscribers ?? OBSERVABILITY_DEFAULTS.streamMaxSubscribers,
    queueSize: opts.stream?.queueSize,
    stallMs: opts.stream?.stallMs,
  });

  // The buffer and metrics refer to each other (written/dropped counters, the buffered
  // gauge), so the buffer reads the metrics lazily.
  let buffer: EventBuffer | null = null;
  const metrics = createMetrics({
    prefix: config.metricsPrefix,
    maxLabelValues: config.metricsMaxLabelValues ?? OBSERVABILITY_DEFAULTS.metricsMaxLabelValues,
    countControls: async () => (await store.listControls({ limit: 1 })).total,
    bufferedEvents: () => buffer?.size ?? 0,
    streamSubscribers: () => hub.size,
    streamDrops: () => hub.drops(),
    processMetrics: opts.processMetrics,
  });
  const writer = chooseWriter(opts);
  buffer = new EventBuffer({
    capacity: config.eventBufferSize,
    // Handing events to the writer thread costs the main thread little per batch, and events
    // kept waiting for the timer would survive the young generation's collections: copied
    // from space to space and promoted (on the realistic workload, 6,100 instructions of
    // scavenging per request against 2,500 handed over at 64; docs/observability.md). The
    // store's own connection (the inline writer) writes on the main thread and keeps the
    // default, half the capacity.
    flushThreshold: writer.kind === 'worker' ? THREAD_HANDOVER_EVENTS : undefined,
    write: (batch) => writer.write(batch),
    // A deny is written within DENY_FLUSH_MS: a crash loses at most that much of them.
    urgent: isUrgentEvent,
    onWritten: (n) => metrics.eventsWritten.inc(n),
    onDropped: (n, reason) => metrics.eventsDropped.inc({ reason }, n),
    onWriteError: (err, n) => logger?.error({ err, events: n }, 'observability: writing events failed; the batch was dropped'),
    onRowsRejected: (err, rejected, n) =>
      logger?.error(
        { err, events: n, rejected },
        `observability: the store refused ${rejected} of ${n} events written one by one; those were dropped (reason rejected), the rest written`,
      ),
    // A database outage keeps events in memory (bounded by the capacity) until it returns.
    retryable: (err) => err instanceof StoreError && err.kind === 'unavailable',
    onWriteDeferred: (err, n) =>
      logger?.warn({ err, events: n }, 'observability: database unavailable; events stay buffered until it returns'),
  });
  const events = buffer;
  const rollups = new NonMatchRollups({
    maxKeys: config.rollupMaxKeys ?? OBSERVABILITY_DEFAULTS.rollupMaxKeys,
    write: (rows) => writer.writeRollups(rows),
    onWritten: (n) => metrics.eventsWritten.inc(n),
    onDropped: (n, reason) => metrics.eventsDropped.inc({ reason }, n),
    onWriteError: (err, n) => logger?.error({ err, events: n }, 'observability: writing non-match rollups failed; they were dropped'),
    retryable: (err) => err instanceof StoreError && err.kind === 'unavailable',
    onWriteDeferred: (err, n) =>
      logger?.warn({ err, events: n }, 'observability: database unavailable; non-match rollups stay in memory until it returns'),
  });
  const sampleRate = Math.min(1, Math.max(0, config.nonMatchSampleRate ?? OBSERVABILITY_DEFAULTS.nonMatchSampleRate));
  // Rate 0 and 1 decide without drawing a random number.
  const sampled = (): boolean => sampleRate > 0 && (sampleRate >= 1 || Math.random() < sampleRate);
  /** Whether any of `count` non-matches would have been sampled. */
  const sampledOneOf = (count: number): boolean => sampleRate > 0 && (sampleRate >= 1 || Math.random() < 1 - (1 - sampleRate) ** count);
  const flushAll = async (): Promise<void> => {
    settle();
    await Promise.all([events.flush(), rollups.flush()]);
  };

  /**
   * Matches and errors become event rows; non-matches are counted into the rollups (and
   * sampled ones are also stored as rows). Returns the events accepted and dropped.
   */
  const accept = (rows: ObservabilityEvent[], toRoll: ObservabilityEvent[]): { enqueued: number; dropped: number } => {
    let enqueued = 0;
    let dropped = 0;
    for (const e of toRoll) {
      const parsed = Date.parse(e.timestamp);
      const ms = Number.isNaN(parsed) ? Date.now() : parsed;
      if (rollups.add(ms, e, e.execution_duration_ms, e.count ?? 1)) enqueued++;
      else dropped++;
    }
    if (rows.length > 0) {
      const pushed = events.push(rows);
      enqueued += pushed.enqueued;
      dropped += pushed.dropped;
    }
    return { enqueued, dropped };
  };

  let flushTimer: NodeJS.Timeout | null = null;
  let pruneTimer: NodeJS.Timeout | null = null;
  let closed: Promise<void> | null = null;

  const prune = async (now = Date.now()): Promise<number> => {
    const before = new Date(now - config.eventRetentionDays * DAY_MS).toISOString();
    return writer.prune(before);
  };
  const pruneLogged = () => {
    prune().catch((err: unknown) => logger?.warn({ err }, 'observability: pruning old events failed'));
  };

  const examples = createExampleTaker(opts.exampleRedact);
  const missing = new SelectorMissingReporter(metrics, logger);
  const unguarded = new UnguardedReporter(metrics, logger);

  // Unlabelled: one handle for the life of the app.
  const evaluationSeconds = metrics.evaluationDuration.child();

  const record = (input: RecordEvaluationInput, now: number) => {
    const executions = executionsOf(input);
    const { result } = input.outcome;
    metrics.evaluations.child(metrics.agentLabels.value(input.agent_name), result.decision).inc();
    if (input.unguarded === true) unguarded.report(input.agent_name);
    for (const m of result.matches) metrics.controlMatches.child(metrics.controlLabels.value(m.control_name), m.action).inc();
    for (const m of result.shadow_matches) metrics.shadowMatches.child(metrics.controlLabels.value(m.control_name), m.action).inc();
    let durationMs = 0;
    for (const x of executions) {
      durationMs += x.duration_ms;
      if (x.error_message !== null) metrics.evaluatorErrors.child(metrics.evaluatorLabels.value(x.evaluator_name || 'unknown')).inc();
      else if (x.selector_missing === true) missing.report({ ...x, agent_name: input.agent_name, step_name: input.step.name });
    }
    evaluationSeconds.observe(durationMs / 1000);
    if (!enabled && hub.size === 0) return;
    // Formatted and read only when a row or a stream summary needs them (rolled-up
    // non-matches need neither).
    let timestamp: string | undefined;
    let ids: TraceIds | undefined;
    if (enabled && executions.length > 0) {
      let rows: ObservabilityEvent[] | null = null;
      let metadata: Map<number, Record<string, unknown>> | null | undefined;
      const group = rollups.group(now, input.agent_name, input.stage, input.step.type);
      for (const x of executions) {
        if (isNonMatch(x)) {
          rollups.addExecution(group, x);
          if (!sampled()) continue;
        }
        if (metadata === undefined) metadata = metadataByControl(result);
        ids ??= input.trace();
        const event: StoredEvent = eventOf(input, ids, x, (timestamp ??= isoOfEpochMs(now)), metadata);
        if (x.mode === 'shadow' && x.matched) event.example = examples.take(x.control_id, input.step, x.selector_paths ?? [x.selector_path], now);
        (rows ??= []).push(event);
      }
      if (rows) events.push(rows);
    }
    if (hub.size > 0) {
      hub.publishEvaluation(summaryOf(input, ids ?? input.trace(), executions, durationMs, timestamp ?? isoOfEpochMs(now)));
    }
  };

  // Evaluations wait here for the end of the event-loop turn. Recording them one by one
  // inside each request ran the recording code with cold caches between two requests; a
  // batch per turn runs it warm, at a fraction of the cost (docs/observability.md).
  let pending: RecordEvaluationInput[] = [];
  let pendingAt: number[] = [];
  const settle = () => {
    if (pending.length === 0) return;
    // Taken before recording, and replaced rather than truncated: setting an array's
    // length goes through V8's runtime, several times the cost of a fresh array.
    const batch = pending;
    const times = pendingAt;
    pending = [];
    pendingAt = [];
    for (let i = 0; i < batch.length; i++) {
      try {
        record(batch[i]!, times[i]!);
      } catch (err) {
        // Observability must never fail an evaluation.
        logger?.warn({ err }, 'observability: recording an evaluation failed');
      }
    }
  };

  return {
    enabled,
    metrics,
    hub,
    buffer: events,
    rollups,
    get writerKind() {
      return writer.kind;
    },
    recordEvaluation(input) {
      if (pending.push(input) === 1) setImmediate(settle);
      pendingAt.push(Date.now());
      // A turn that answers this many evaluations records them without waiting for its end.
      if (pending.length >= MAX_PENDING) settle();
    },
    settle,
    ingest(batch) {
      for (const e of batch) {
        if (e.selector_missing === true) missing.report({ ...e, step_name: stepNameOf(e) });
      }
      if (!enabled) {
        metrics.eventsDropped.inc({ reason: 'disabled' }, batch.length);
        return { received: batch.length, enqueued: 0, dropped: batch.length };
      }
      // Client events take the same path as the server's own: non-matches roll up, and a
      // sampled non-match is also kept as a row (not counted twice in the answer).
      const rows: ObservabilityEvent[] = [];
      const toRoll: ObservabilityEvent[] = [];
      const samples: ObservabilityEvent[] = [];
      for (const e of batch) {
        if (!isNonMatch(e)) rows.push(e);
        else {
          toRoll.push(e);
          if (e.count === undefined || e.count === 1) {
            if (sampled()) samples.push(e);
          } else if (sampledOneOf(e.count)) {
            // A client's rollup kept as one non-match of its count, with their mean duration.
            const { count, ...one } = e;
            samples.push({ ...one, execution_duration_ms: e.execution_duration_ms / count });
          }
        }
      }
      const { enqueued, dropped } = accept(rows, toRoll);
      if (samples.length > 0) events.push(samples);
      return { received: batch.length, enqueued, dropped };
    },
    publishReload(notice) {
      metrics.reloads.inc({ result: notice.result });
      hub.publishReload(notice);
    },
    start() {
      if (closed || flushTimer) return;
      flushTimer = setInterval(() => void flushAll(), Math.max(0.01, config.flushIntervalSeconds) * 1000);
      flushTimer.unref();
      pruneLogged();
      pruneTimer = setInterval(pruneLogged, HOUR_MS);
      pruneTimer.unref();
    },
    close() {
      closed ??= (async () => {
        if (flushTimer) clearInterval(flushTimer);
        if (pruneTimer) clearInterval(pruneTimer);
        flushTimer = pruneTimer = null;
        // Live streams still see the evaluations answered before the close.
        settle();
        hub.close();
        await flushAll();
        await writer.close();
      })();
      return closed;
    },
    flush: flushAll,
    prune,
  };
}

/** The SDK names the step in its events' metadata; other clients may not. */
function stepNameOf(e: ObservabilityEvent): string {
  const name = e.metadata?.step_name;
  return typeof name === 'string' ? name : 'unknown';
}

function chooseWriter(opts: CreateObservabilityOptions): EventWriter {
  const path = opts.sqlitePath;
  const url = opts.workerUrl === undefined ? defaultWorkerUrl() : opts.workerUrl;
  if (!path || path === ':memory:' || !url || opts.store.kind !== 'sqlite') return inlineWriter(opts.store);
  try {
    return workerWriter({ sqlitePath: path, workerUrl: url, fallback: opts.store });
  } catch (err) {
    opts.logger?.warn({ err }, 'observability: event writer thread unavailable; writing inline');
    return inlineWriter(opts.store);
  }
}
