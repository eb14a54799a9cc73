/** The label value that stands for every value past the limit. */
export const OTHER_LABEL = 'other';

/**
 * Bounds the distinct values a metric label can take. Agent and control names come from
 * users; without a bound, every new name would add time series to every scrape forever.
 * The first `max` distinct values are kept as they are; later ones become `other`.
 */
export class LabelLimiter {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number) {}

  value(raw: string): string {
    if (this.seen.has(raw)) return raw;
    if (this.seen.size >= this.max) return OTHER_LABEL;
    this.seen.add(raw);
    return raw;
  }

  get size(): number {
    return this.seen.size;
  }
}
