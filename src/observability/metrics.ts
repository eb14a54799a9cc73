import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { LabelLimiter } from './label-limiter.js';

/** The typed metric handles of one app, on the app's own registry (never the global one). */
export interface GuardMetrics {
  readonly registry: Registry;
  readonly prefix: string;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly evaluations: Counter<'agent' | 'decision'>;
  readonly controlMatches: Counter<'control' | 'action'>;
  readonly evaluationDuration: Histogram;
  readonly evaluatorErrors: Counter<'evaluator'>;
  readonly controls: Gauge;
  readonly eventsBuffered: Gauge;
  readonly eventsWritten: Counter;
  readonly eventsDropped: Counter<'reason'>;
  readonly reloads: Counter<'result'>;
  readonly streamSubscribers: Gauge;
  /** Bound label values: the first N distinct names, then `other`. */
  readonly agentLabels: LabelLimiter;
  readonly controlLabels: LabelLimiter;
  readonly evaluatorLabels: LabelLimiter;
  /** Hot-path helpers: label children are looked up once per label set, then reused. */
  observeHttp(method: string, route: string, status: number, seconds: number): void;
  countEvaluation(agent: string, decision: string): void;
}

/**
 * prom-client hashes the label object on every call; a child per label set skips that.
 * The caller bounds the label values, so the cache is bounded too.
 */
function childCache<C>(make: (...values: string[]) => C): (...values: string[]) => C {
  const cache = new Map<string, C>();
  return (...values) => {
    const key = values.join('\u0000');
    let child = cache.get(key);
    if (!child) {
      child = make(...values);
      cache.set(key, child);
    }
    return child;
  };
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
  if (opts.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: `${prefix}_` });

  const cacheMs = opts.controlsCacheMs ?? 5000;
  let cachedCount: { value: number; at: number } | null = null;
  const countControls = opts.countControls;
  const bufferedEvents = opts.bufferedEvents;
  const streamSubscribers = opts.streamSubscribers;

  const httpRequests = new Counter({
    name: name('http_requests_total'),
    help: 'HTTP requests by method, route pattern and status code',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const httpDuration = new Histogram({
    name: name('http_request_duration_seconds'),
    help: 'HTTP request duration in seconds by method, route pattern and status code',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  const evaluations = new Counter({
    name: name('evaluations_total'),
    help: 'Evaluated steps by agent and final decision',
    labelNames: ['agent', 'decision'] as const,
    registers: [registry],
  });
  const httpChild = childCache((method, route, status) => ({
    requests: httpRequests.labels(method, route, status),
    duration: httpDuration.labels(method, route, status),
  }));
  const evaluationChild = childCache((agent, decision) => evaluations.labels(agent, decision));

  return {
    registry,
    prefix,
    httpRequests,
    httpDuration,
    evaluations,
    controlMatches: new Counter({
      name: name('control_matches_total'),
      help: 'Control matches by control name and action',
      labelNames: ['control', 'action'] as const,
      registers: [registry],
    }),
    evaluationDuration: new Histogram({
      name: name('evaluation_duration_seconds'),
      help: 'Engine time per evaluated step in seconds (sum of the controls evaluated)',
      buckets: EVALUATION_BUCKETS,
      registers: [registry],
    }),
    evaluatorErrors: new Counter({
      name: name('evaluator_errors_total'),
      help: 'Evaluator failures by evaluator name',
      labelNames: ['evaluator'] as const,
      registers: [registry],
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
      help: 'Observability events dropped: buffer_full, write_failed or disabled',
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
    agentLabels: new LabelLimiter(opts.maxLabelValues),
    controlLabels: new LabelLimiter(opts.maxLabelValues),
    evaluatorLabels: new LabelLimiter(opts.maxLabelValues),
    observeHttp(method, route, status, seconds) {
      const child = httpChild(method, route, String(status));
      child.requests.inc();
      child.duration.observe(seconds);
    },
    countEvaluation(agent, decision) {
      evaluationChild(agent, decision).inc();
    },
  };
}
