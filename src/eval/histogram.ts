/**
 * Quantiles of durations in constant memory: a log-scale histogram (5 % wide buckets from
 * 0.1 µs to about 10 minutes), so a dataset of any length keeps a few KB per control. PURE.
 */
const FLOOR_MS = 1e-4;
const GROWTH = 1.05;
const LOG_GROWTH = Math.log(GROWTH);
const BUCKETS = 512;

export class DurationHistogram {
  readonly #counts = new Uint32Array(BUCKETS);
  #total = 0;

  add(ms: number): void {
    const b = ms <= FLOOR_MS ? 0 : Math.min(BUCKETS - 1, 1 + Math.floor(Math.log(ms / FLOOR_MS) / LOG_GROWTH));
    this.#counts[b]!++;
    this.#total++;
  }

  get count(): number {
    return this.#total;
  }

  /** The `q` quantile (0..1) in milliseconds, to within 5 %; null when empty. */
  quantile(q: number): number | null {
    if (this.#total === 0) return null;
    const rank = Math.max(1, Math.ceil(q * this.#total));
    let seen = 0;
    for (let b = 0; b < BUCKETS; b++) {
      seen += this.#counts[b]!;
      // The bucket's geometric middle: within 2.5 % of any duration in it.
      if (seen >= rank) return b === 0 ? FLOOR_MS : FLOOR_MS * GROWTH ** (b - 0.5);
    }
    return null;
  }
}
