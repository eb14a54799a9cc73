import type { Store } from '../store/types.js';

export type DatabaseState = 'ok' | 'unavailable';

export interface HealthMonitorOptions {
  /** A check slower than this counts as unavailable (default 1000 ms). */
  timeoutMs?: number;
  /** A result is reused for this long, so health probes never load the database (default 1000 ms). */
  maxAgeMs?: number;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * Whether the database answers, checked cheaply (`store.revision()`, one indexed row) and
 * at most once per `maxAgeMs` however often load balancers probe `/health`. Concurrent
 * probes share the check in flight.
 */
export class HealthMonitor {
  private last: { state: DatabaseState; at: number } | null = null;
  private running: Promise<DatabaseState> | null = null;
  private readonly timeoutMs: number;
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(
    private readonly store: Pick<Store, 'revision'>,
    options: HealthMonitorOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 1000;
    this.maxAgeMs = options.maxAgeMs ?? 1000;
    this.now = options.now ?? Date.now;
  }

  database(): Promise<DatabaseState> {
    if (this.last && this.now() - this.last.at < this.maxAgeMs) return Promise.resolve(this.last.state);
    this.running ??= this.check().then((state) => {
      this.last = { state, at: this.now() };
      this.running = null;
      return state;
    });
    return this.running;
  }

  private async check(): Promise<DatabaseState> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<DatabaseState>((resolve) => {
      timer = setTimeout(() => resolve('unavailable'), this.timeoutMs);
      timer.unref();
    });
    // Any failure counts: a database that answers with errors cannot take writes either.
    const probe = this.store.revision().then(
      (): DatabaseState => 'ok',
      (): DatabaseState => 'unavailable',
    );
    try {
      return await Promise.race([probe, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
