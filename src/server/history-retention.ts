/**
 * Keeps the change history (`change_log`) bounded: at start and then every interval,
 * entries older than GUARD_HISTORY_MAX_AGE_DAYS and beyond the newest
 * GUARD_HISTORY_MAX_ENTRIES are deleted. Without it every write (hot reload of a large
 * file included) would be kept for ever.
 */
import type { Store } from '../store/types.js';

const DAY_MS = 24 * 60 * 60 * 1000;
/** How often history is pruned while the server runs. */
export const HISTORY_PRUNE_INTERVAL_MS = 60 * 60 * 1000;

export interface HistoryRetentionConfig {
  readonly historyMaxEntries: number;
  readonly historyMaxAgeDays: number;
}

/** One pruning pass; resolves with how many entries were deleted. */
export function pruneHistoryNow(store: Pick<Store, 'pruneHistory'>, config: HistoryRetentionConfig, now = Date.now()): Promise<number> {
  return store.pruneHistory({ maxEntries: config.historyMaxEntries, before: new Date(now - config.historyMaxAgeDays * DAY_MS).toISOString() });
}

/** Prunes now and every interval until `stop()`; failures are logged, never thrown. */
export function startHistoryRetention(
  store: Pick<Store, 'pruneHistory'>,
  config: HistoryRetentionConfig,
  warn: (err: unknown) => void,
): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const pass = () => {
    running = running.then(() => pruneHistoryNow(store, config)).catch(warn);
  };
  pass();
  const timer = setInterval(pass, HISTORY_PRUNE_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
