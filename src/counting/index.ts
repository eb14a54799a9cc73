/**
 * Counting: sliding windows and the counters the rate, budget and repeat evaluators count
 * in. In memory for one server (long windows written through to the SQLite file), and on
 * PostgreSQL's shared table for replicas, exact (leased room under each key's limit) or
 * approximate (batched). The stores implement the persistence interfaces of types.ts in
 * their own SQL; everything else about counting lives here.
 */
export { counterKindOf } from './types.js';
export type {
  CountAnswer,
  CounterKind,
  CounterReport,
  CounterRow,
  CounterRowStore,
  CounterUsage,
  ClockedCounters,
  HeldCount,
  CountRequest,
  Counters,
  LeaseTerms,
  SharedCountAnswer,
  SharedCountRequest,
  SharedCounterStore,
  StoredCounter,
} from './types.js';
export { BUCKETS, COUNT_TIME_MARGIN_MS, MAX_WINDOW_MS, parseWindow, stillInWindow, usedAt } from './window.js';
export { DEFAULT_MAX_KEYS, keyCapMessage, MemoryCounters, PERSIST_MIN_WINDOW_MS, type CounterPersistence, type MemoryCountersOptions } from './memory-counters.js';
export { LEASE_MS, LEASE_STEPS, LeasedCounts } from './leased-counts.js';
export { ApproximateCounts, FLUSH_INTERVAL_MS } from './approximate-counts.js';
export { countedAlready, countedOf, countedText, noteCounts, type CountedStep } from './counted-already.js';
export { createServerCounters, type CounterLimits, type CounterStores, type ServerCounters, type ServerCountersOptions } from './server-counters.js';
