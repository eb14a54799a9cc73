/**
 * Collects incoming events and hands them over in one batch at most every `intervalMs`,
 * so a flood of events costs one reducer call and one redraw per frame (20 per second
 * at the default 50 ms) while a trickle still shows up at once.
 */
export class EventBatcher<T> {
  private pending: T[] = [];
  private timer: NodeJS.Timeout | null = null;
  private lastFlush = -Infinity;

  constructor(
    private readonly flush: (items: T[]) => void,
    private readonly intervalMs = 50,
    private readonly now: () => number = () => performance.now(),
  ) {}

  push(item: T): void {
    this.pending.push(item);
    if (this.timer) return;
    const wait = Math.max(0, this.lastFlush + this.intervalMs - this.now());
    this.timer = setTimeout(() => this.flushNow(), wait);
  }

  /** Hands over whatever is pending now (also used on shutdown). */
  flushNow(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.length === 0) return;
    const items = this.pending;
    this.pending = [];
    this.lastFlush = this.now();
    this.flush(items);
  }

  get size(): number {
    return this.pending.length;
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.pending = [];
  }
}
