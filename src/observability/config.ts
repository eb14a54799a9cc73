/**
 * The configuration fields observability reads. The server's ServerConfig carries them
 * (src/server/config.ts); this structural subset keeps observability independent of the
 * server module and lets tests build a config in one line.
 */
export interface ObservabilityConfig {
  /** OBSERVABILITY_ENABLED: store events. Metrics and the live stream work either way. */
  observabilityEnabled: boolean;
  /** OBSERVABILITY_FLUSH_INTERVAL_SECONDS. */
  flushIntervalSeconds: number;
  /** PROMETHEUS_METRICS_PREFIX, `guard` by default. */
  metricsPrefix: string;
  /** Events older than this are pruned (30 by default). */
  eventRetentionDays: number;
  /** Capacity of the in-memory events buffer. */
  eventBufferSize: number;
  /**
   * OBSERVABILITY_NON_MATCH_SAMPLE_RATE (0..1, default 0): share of non-matches also stored
   * as event rows for inspection. Every non-match is counted in the rollups either way.
   */
  nonMatchSampleRate?: number;
  /** Distinct (minute, agent, control, ...) non-match rollups held in memory (50,000). */
  rollupMaxKeys?: number;
  /** Distinct agent/control label values before the rest are reported as `other` (1000). */
  metricsMaxLabelValues?: number;
  /** Seconds between `: ping` comments on the live stream (15). */
  streamHeartbeatSeconds?: number;
  /** Concurrent live stream subscribers before 503 (100). */
  streamMaxSubscribers?: number;
}

export const OBSERVABILITY_DEFAULTS = {
  metricsMaxLabelValues: 1000,
  nonMatchSampleRate: 0,
  rollupMaxKeys: 50_000,
  streamHeartbeatSeconds: 15,
  streamMaxSubscribers: 100,
  /** Events a subscriber may have queued while its socket is busy. */
  streamQueueSize: 256,
  /** A subscriber that has not drained for this long is disconnected. */
  streamStallMs: 30_000,
} as const;
