import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { CounterFamily, HistogramFamily } from './hot-metrics.js';
import { LabelLimiter } from './label-limiter.js';

/** The typed metric handles of one app, on the app's own registry (never the global one). */
export interface GuardMetrics {
  readonly registry: Registry;
  readonly prefix: string;
  // Recorded on every request: plain handles (hot-metrics.ts), exposed through `registry`.
  readonly httpRequests: CounterFamily;
  readonly httpDuration: HistogramFamily;
  readonly evaluations: CounterFamily;
  readonly controlMatches: CounterFamily;
  /** Matches of shadow controls: what they would have done, apart from the real matches. */
  readonly shadowMatches: CounterFamily;
  readonly evaluationDuration: HistogramFamily;
  readonly evaluatorErrors: CounterFamily;
  /** Steps a control was scoped to but whose selector found nothing, by agent and control. */
  readonly selectorMissing: CounterFamily;
  /** Evaluations of agents with no control in force (every step allowed), by agent. */
  readonly unguardedEvaluations: CounterFamily;
  /** Tools of pinned MCP servers that gateways reported drifted, by server, tool and kind (changed, unpinned). */
  readonly mcpToolDrift: CounterFamily;
  /** Pinned MCP servers whose initialize instructions gateways reported changed, by server. */
  readonly mcpInstructionsDrift: CounterFamily;
  readonly controls: Gauge;
  readonly eventsBuffered: Gauge;
  readonly eventsWritten: Counter;
  readonly eventsDropped: Counter<'reason'>;
  readonly reloads: Counter<'result'>;
  readonly streamSubscribers: Gauge;
  readonly streamSubscribersDropped: Counter<'reason'>;
  /** Bound label values: the first N distinct names, then `other`. */
  readonly agentLabels: LabelLimiter;
  readonly controlLabels: LabelLimiter;
  readonly evaluatorLabels: LabelLimiter;
  /** MCP server and tool names of drift reports: tool names come from untrusted upstream servers. */
  readonly mcpServerLabels: LabelLimiter;
  readonly mcpToolLabels: LabelLimiter;
  /** Hot-path helper: one request, by route pattern (never the raw URL) and status. */
  observeHttp(method: string, route: string, status: number, seconds: number): void;
}

export interface MetricsOptions {
  prefix: string;
  maxLabelValues: number;
  /** How many controls are stored; read at scrape time, cached for `controlsCacheMs`. */
  countControls?: () => Promise<number>;
  controlsCacheMs?: number;
  /** How many events wait in the buffer, read at scrape time. */
  bufferedEvents?: () => number;
  streamSubscribers?: () => number;
  /** Live stream subscribers dropped since start, by reason, read at scrape time. */
  streamDrops?: () => Readonly<Record<'behind' | 'stalled', number>>;
  /** Process metrics (CPU, memory, event loop lag); off in tests that build many apps. */
  processMetrics?: boolean;
}

/** Engine time per step is microseconds to milliseconds; the buckets resolve that range. */
const EVALUATION_BUCKETS = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 1];
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** Metric names allow [a-zA-Z0-9_:] and must not start with a digit. */
export function sanitisePrefix(prefix: string): string {
  const cleaned = prefix.trim().replace(/[^a-zA-Z0-9_:]/g, '_').replace(/_+$/, '');
  if (cleaned === '') return 'guard';
  return /^\d/.test(cleaned) ? `_${cleaned}` : cleaned;
}

export function createMetrics(opts: MetricsOptions): GuardMetrics {
  const prefix = sanitisePrefix(opts.prefix);
  const registry = new Registry();
  const name = (n: string) => `${prefix}_${n}`;
  if (opts.processMetrics !== false) {
    collectDefaultMetrics({ register: registry, prefix: `${prefix}_` });
    // prom-client also reports nodejs_active_{handles,requests,resources}_total: gauges
    // named like counters, which promtool (and rate()) get wrong. The same numbers are the
    // sum of the per-type gauges beside them, sum(<prefix>_nodejs_active_handles).
    for (const kind of ['handles', 'requests', 'resources']) registry.removeSingleMetric(name(`nodejs_active_${kind}_total`));
  }

  const cacheMs = opts.controlsCacheMs ?? 5000;
  let cachedCount: { value: number; at: number } | null = null;
  const countControls = opts.countControls;
  const bufferedEvents = opts.bufferedEvents;
  const streamSubscribers = opts.streamSubscribers;
  const streamDrops = opts.streamDrops;
  const dropsSeen = { behind: 0, stalled: 0 };

  const httpRequests = new CounterFamily({
    name: name('http_requests_total'),
    help: 'HTTP requests by method, route pattern and status code',
    labelNames: ['method', 'route', 'status'],
    registry,
  });
  const httpDuration = new HistogramFamily({
    name: name('http_request_duration_seconds'),
    help: 'HTTP request duration in seconds by method, route pattern and status code',
    labelNames: ['method', 'route', 'status'],
    buckets: HTTP_BUCKETS,
    registry,
  });
  return {
    registry,
    prefix,
    httpRequests,
    httpDuration,
    evaluations: new CounterFamily({
      name: name('evaluations_total'),
      help: 'Evaluated steps by agent and final decision',
      labelNames: ['agent', 'decision'],
      registry,
    }),
    controlMatches: new CounterFamily({
      name: name('control_matches_total'),
      help: 'Control matches by control name and action',
      labelNames: ['control', 'action'],
      registry,
    }),
    shadowMatches: new CounterFamily({
      name: name('shadow_matches_total'),
      help: 'Matches of shadow controls (never part of a decision) by control name and action',
      labelNames: ['control', 'action'],
      registry,
    }),
    evaluationDuration: new HistogramFamily({
      name: name('evaluation_duration_seconds'),
      help: 'Engine time per evaluated step in seconds (sum of the controls evaluated)',
      buckets: EVALUATION_BUCKETS,
      registry,
    }),
    evaluatorErrors: new CounterFamily({
      name: name('evaluator_errors_total'),
      help: 'Evaluator failures by evaluator name',
      labelNames: ['evaluator'],
      registry,
    }),
    selectorMissing: new CounterFamily({
      name: name('selector_missing_total'),
      help: 'Steps in a control\'s scope whose selector found nothing to check, by agent and control',
      labelNames: ['agent', 'control'],
      registry,
    }),
    unguardedEvaluations: new CounterFamily({
      name: name('unguarded_evaluations_total'),
      help: 'Evaluations of agents with no control in force (every step allowed unchecked), by agent',
      labelNames: ['agent'],
      registry,
    }),
    mcpToolDrift: new CounterFamily({
      name: name('mcp_tool_drift_total'),
      help: 'Tools of pinned MCP servers a gateway found drifted (changed since pinned, or not pinned), by server, tool and kind; reported once per tool and kind per pinned document version and gateway',
      labelNames: ['server', 'tool', 'kind'],
      registry,
    }),
    mcpInstructionsDrift: new CounterFamily({
      name: name('mcp_instructions_drift_total'),
      help: 'Pinned MCP servers whose initialize instructions a gateway found changed since pinned, by server; reported once per pinned document version and gateway',
      labelNames: ['server'],
      registry,
    }),
    controls: new Gauge({
      name: name('controls'),
      help: 'Controls stored',
      registers: [registry],
      async collect() {
        if (!countControls) return;
        const now = Date.now();
        if (!cachedCount || now - cachedCount.at > cacheMs) {
          try {
            cachedCount = { value: await countControls(), at: now };
          } catch {
            // A store that cannot answer must not break the scrape; the gauge keeps its last value.
            return;
          }
        }
        this.set(cachedCount.value);
      },
    }),
    eventsBuffered: new Gauge({
      name: name('events_buffered'),
      help: 'Observability events waiting in memory to be written',
      registers: [registry],
      collect() {
        if (bufferedEvents) this.set(bufferedEvents());
      },
    }),
    eventsWritten: new Counter({
      name: name('events_written_total'),
      help: 'Observability events written to the store',
      registers: [registry],
    }),
    eventsDropped: new Counter({
      name: name('events_dropped_total'),
      help: 'Observability events dropped: buffer_full, rejected (the store refused the event alone), write_failed (the store refused a whole batch) or disabled',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    reloads: new Counter({
      name: name('reloads_total'),
      help: 'Hot reloads of the controls directory by result',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    streamSubscribers: new Gauge({
      name: name('stream_subscribers'),
      help: 'Open live event stream connections',
      registers: [registry],
      collect() {
        if (streamSubscribers) this.set(streamSubscribers());
      },
    }),
    streamSubscribersDropped: new Counter({
      name: name('stream_subscribers_dropped_total'),
      help: 'Live event stream subscribers disconnected by the server: behind (its queue overflowed while its socket took nothing) or stalled (its socket stayed blocked past the stall time)',
      labelNames: ['reason'] as const,
      registers: [registry],
      collect() {
        if (!streamDrops) return;
        const now = streamDrops();
        for (const reason of ['behind', 'stalled'] as const) {
          // Both series show from the first scrape, at 0 until a drop.
          this.inc({ reason }, now[reason] - dropsSeen[reason]);
          dropsSeen[reason] = now[reason];
        }
      },
    }),
    agentLabels: new LabelLimiter(opts.maxLabelValues),
    controlLabels: new LabelLimiter(opts.maxLabelValues),
    evaluatorLabels: new LabelLimiter(opts.maxLabelValues),
    mcpServerLabels: new LabelLimiter(opts.maxLabelValues),
    mcpToolLabels: new LabelLimiter(opts.maxLabelValues),
    observeHttp(method, route, status, seconds) {
      // Each family answers a repeat of its last label set with three compares
      // (hot-metrics.ts), and a recent status's text comes from V8's number-string cache.
      const code = String(status);
      httpRequests.child(method, route, code).inc();
      httpDuration.child(method, route, code).observe(seconds);
    },
  };
}
