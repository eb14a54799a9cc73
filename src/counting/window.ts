/**
 * PURE: sliding windows for the rate and budget evaluators.
 *
 * A window of W is split into 60 buckets of W/60. A key's state holds the sums of its
 * non-empty buckets. The window's sum at time t is the sum of the bucket holding t and
 * the 60 before it: the whole oldest bucket counts even where part of it lies before
 * t - W. That is conservative: every step of the exact window (t - W, t] is counted, so
 * the limit is never exceeded in any window of length W, and a step counted at most W/60
 * longer than exact may make a step be refused at most W/60 early. Nothing resets at the
 * top of a minute: a burst straddling a bucket edge still sees every earlier step.
 */

export const BUCKETS = 60;

/** The longest window a control may use: 30 days. */
export const MAX_WINDOW_MS = 30 * 24 * 3600 * 1000;

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `10s`, `1m`, `1h`, `24h`, `7d` -> milliseconds, or a message saying what is wrong. */
export function parseWindow(text: string): number | string {
  const m = /^([1-9][0-9]{0,6})(s|m|h|d)$/.exec(text);
  if (!m) return `window "${text}" is not a duration: a whole number and a unit s, m, h or d (10s, 1m, 1h, 24h, 7d)`;
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  if (ms > MAX_WINDOW_MS) return `window "${text}" is longer than 30 days (30d), the longest window`;
  return ms;
}

/** A key's counts: bucket numbers (ascending) and their sums, non-empty buckets only. */
export interface WindowState {
  idx: number[];
  val: number[];
}

export function emptyState(): WindowState {
  return { idx: [], val: [] };
}

/** The bucket holding time `now` (ms) for a window of `windowMs`. */
export function bucketOf(now: number, windowMs: number): number {
  return Math.floor(now / (windowMs / BUCKETS));
}

/** Drops buckets that left the window; returns the sum of the rest. */
export function prune(state: WindowState, current: number): number {
  const oldest = current - BUCKETS;
  let drop = 0;
  while (drop < state.idx.length && state.idx[drop]! < oldest) drop++;
  if (drop > 0) {
    state.idx.splice(0, drop);
    state.val.splice(0, drop);
  }
  let sum = 0;
  for (const v of state.val) sum += v;
  return sum;
}

/** Adds `amount` to the bucket `current` (the newest bucket, if a clock went back). */
export function add(state: WindowState, current: number, amount: number): void {
  const last = state.idx.length - 1;
  if (last >= 0 && state.idx[last]! >= current) {
    state.val[last] = state.val[last]! + amount;
    return;
  }
  state.idx.push(current);
  state.val.push(amount);
}

export interface TakeResult {
  used: number;
  over: boolean;
}

/**
 * Counts one step into `state` (see CountRequest in ../types.ts): `always` adds and is
 * over when the sum passes `max`; otherwise the amount is added only when it fits.
 */
export function take(state: WindowState, now: number, windowMs: number, amount: number, max: number, always: boolean): TakeResult {
  const current = bucketOf(now, windowMs);
  const before = prune(state, current);
  if (always) {
    add(state, current, amount);
    return { used: before + amount, over: before + amount > max };
  }
  if (before + amount > max) return { used: before, over: true };
  add(state, current, amount);
  return { used: before + amount, over: false };
}

/**
 * How much earlier than the time read after it a count may have gone into its bucket: the
 * time is read once the count is answered, a lease's room went into the bucket of its
 * grant, and replicas' clocks differ by a round trip to the database.
 */
export const COUNT_TIME_MARGIN_MS = 1_000;

/**
 * Whether a step counted at `at` is surely still in the window at `now`: its bucket, taken
 * COUNT_TIME_MARGIN_MS early, is one the window's sum holds (prune).
 */
export function stillInWindow(at: number, now: number, windowMs: number): boolean {
  return bucketOf(at - COUNT_TIME_MARGIN_MS, windowMs) >= bucketOf(now, windowMs) - BUCKETS;
}

/** The window's current sum without counting anything. */
export function usedAt(state: WindowState, now: number, windowMs: number): number {
  return prune(state, bucketOf(now, windowMs));
}

/** When the state's newest step leaves the window (ms): after that the key is idle. */
export function idleAfter(state: WindowState, windowMs: number): number {
  const last = state.idx[state.idx.length - 1];
  if (last === undefined) return 0;
  return (last + BUCKETS + 1) * (windowMs / BUCKETS);
}
