/**
 * PURE: the words of counting (src/counting/): what a counted step asks and is answered,
 * the counters evaluators count in, and what the stores persist and share for them. The
 * stores implement the persistence interfaces here in their own SQL.
 */

/** The evaluators that count: each key's counter belongs to one of them. */
export type CounterKind = 'rate' | 'budget' | 'repeat';

/** One key's counter, as the stores persist it and stats show it. */
export interface CounterRow {
  counter: string;
  control_id: number;
  key: string;
  kind: CounterKind;
  window_ms: number;
  max: number;
  /** Bucket numbers, ascending, and their sums: the key's non-empty buckets. */
  idx: number[];
  val: number[];
  /** When the key goes idle (epoch ms); the row may be deleted after. */
  expires_at: number;
  /**
   * When the key's counts began: made, or emptied by a window change (the SQLite file's
   * rows; a count noted before it is in none of its buckets). Null or absent: not known.
   */
  since?: number | null;
}

/**
 * One counted step: add `amount` to the counter `counter` (a control, or one leaf of a
 * condition tree) for `key` within a sliding window of `window_ms`.
 * - `always` (rate): the amount is always added; `over` when the sum after it exceeds `max`.
 * - not `always` (budget): added only when the sum after it stays within `max`; else
 *   nothing is added and `over` is true.
 */
export interface CountRequest {
  readonly control_id: number;
  /** The control id, plus the leaf's place for a condition tree (`12`, `12/condition.and[0]`). */
  readonly counter: string;
  readonly key: string;
  readonly window_ms: number;
  readonly amount: number;
  readonly max: number;
  readonly always: boolean;
  readonly kind: CounterKind;
  readonly consistency: 'exact' | 'approximate';
}

export interface CountAnswer {
  /** The window's sum once this step is counted (or, refused by a budget, without it). */
  used: number;
  over: boolean;
}

/**
 * Counting for stateful evaluators, provided by the server: in memory (and the SQLite
 * file) for one server, PostgreSQL for replicas. May answer with a promise.
 */
export interface Counters {
  count(request: CountRequest): CountAnswer | Promise<CountAnswer>;
}

/**
 * A count a step made, as a question's approval keeps it (counted-already.ts): its
 * counter, key and window, and the counters' clock once it was counted.
 */
export interface HeldCount {
  readonly counter: string;
  readonly key: string;
  readonly window_ms: number;
  readonly at: number;
}

/** Counters that tell their clock and whether a count made earlier is still held (ServerCounters). */
export interface ClockedCounters extends Counters {
  /** The clock the counters count by (ms since the epoch). */
  now(): number;
  /**
   * Whether a count made at `at` (that clock) is still held: in its window, and not lost
   * since (a restart of one server keeps only long windows; a window change empties a key).
   */
  holds(count: HeldCount): boolean | Promise<boolean>;
}

/** One key's counter as a store keeps it. */
export type StoredCounter = CounterRow;

/** One counted step as a shared store takes it (the fields of CountRequest, plus the time). */
export interface SharedCountRequest {
  counter: string;
  control_id: number;
  key: string;
  kind: CounterKind;
  window_ms: number;
  amount: number;
  max: number;
  always: boolean;
}

/** The SQLite file's counters: long windows written through, read back when the server starts. */
export interface CounterRowStore {
  loadCounters(now: number): StoredCounter[];
  saveCounter(row: StoredCounter): void;
  deleteExpiredCounters(now: number): void;
}

/**
 * What a step carries for its replica's lease of a key (counting/leased-counts.ts): the
 * lease it gives back, if any, and the room it asks for.
 */
export interface LeaseTerms {
  /** The step may be answered `retryAt` instead of refused when only unused leases keep it out. */
  defer: boolean;
  /** The lease given back: as granted, the part not used, and the bucket it went into. */
  release: { granted: number; unused: number; bucket: number } | null;
  /** Room to lease after this step (0: none). */
  ask: number;
  /** How long a lease granted now lasts (ms). */
  leaseMs: number;
}

/** A shared count's answer; with lease terms, also the lease granted and a retry time. */
export interface SharedCountAnswer {
  used: number;
  over: boolean;
  /** Room leased to this replica (counted already), and the bucket it went into. */
  granted?: number;
  leaseBucket?: number;
  /** Not decided: only leases keep it out; count it again after this time (ms since the epoch). */
  retryAt?: number;
}

/** PostgreSQL's counters: each counted step checked and added in one statement, under a row lock. */
export interface SharedCounterStore {
  countShared(request: SharedCountRequest, now: number, allowNewKey: boolean, lease?: LeaseTerms): Promise<SharedCountAnswer>;
  /** Keys with something in their window at `now`. */
  counterUsage(now: number): Promise<StoredCounter[]>;
  /** Deletes idle rows; returns how many rows are left per control id (the key cap is per control). */
  pruneCounters(now: number): Promise<ReadonlyMap<number, number>>;
  /** A key's window and when its counts began (made, or emptied by a window change; null: not known), or null without a row. */
  counterBegan(counter: string, key: string): Promise<{ window_ms: number; since: number | null } | null>;
}


/** A key's use, for stats, the dashboard and metrics. */
export interface CounterUsage {
  control_id: number;
  counter: string;
  key: string;
  kind: CounterKind;
  window_ms: number;
  used: number;
  max: number;
}

/** What stats and metrics read from any counters. */
export interface CounterReport {
  usage(): CounterUsage[] | Promise<CounterUsage[]>;
}

/** A kind as a store's text column holds it (rows of older versions hold rate or budget). */
export function counterKindOf(text: string): CounterKind {
  return text === 'budget' || text === 'repeat' ? text : 'rate';
}
