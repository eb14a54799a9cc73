import type { Store } from '../store/types.js';
import type { ControlSetCache } from './control-sets.js';

export interface ReplicaSyncOptions {
  /** How often the revision is compared, as a fallback for lost notifications (GUARD_SYNC_INTERVAL_MS). */
  intervalMs: number;
  /** Where a failed check is reported; optional so tests stay quiet. */
  log?: { warn(obj: object, msg?: string): void };
}

export interface ReplicaSync {
  /** Resolves once the first revision was read (tests and benchmarks wait for it). */
  readonly ready: Promise<void>;
  stop(): void;
}

/**
 * Keeps this replica's compiled control sets in step with writes made through other
 * replicas on the same database. Change notifications (PostgreSQL LISTEN/NOTIFY) give
 * the agents a write touched, which are invalidated at once; a periodic comparison of
 * `store.revision()` catches what a notification could miss and invalidates everything
 * when the revision moved with no notification in between. Notifications are reliable
 * while their connection stays up (a reconnect reports "anything may have changed"), so
 * a revision that moved while notifications arrived needs nothing more: without that
 * rule every write, this replica's own included, would drop every compiled set.
 * After a failed check succeeds again (the database came back) everything is
 * invalidated once, whatever the revision says.
 */
export function startReplicaSync(
  store: Pick<Store, 'revision' | 'onChange'>,
  cache: Pick<ControlSetCache<unknown>, 'invalidate'>,
  options: ReplicaSyncOptions,
): ReplicaSync {
  let stopped = false;
  let lastRevision: number | null = null;
  let failing = false;
  let checking = false;
  let notified = false;

  const unsubscribe = store.onChange?.((info) => {
    if (stopped) return;
    notified = true;
    cache.invalidate(info.agents ?? 'all');
  });

  const check = async (): Promise<void> => {
    if (checking || stopped) return;
    checking = true;
    // Notifications that arrive while the revision is read count for the next check.
    const sawNotification = notified;
    notified = false;
    try {
      const revision = await store.revision();
      if (stopped) return;
      const moved = lastRevision !== null && revision !== lastRevision;
      if (failing || (moved && !sawNotification)) cache.invalidate('all');
      lastRevision = revision;
      failing = false;
    } catch (error) {
      if (!failing) options.log?.warn({ err: error }, 'replica sync: reading the store revision failed; will retry');
      failing = true;
    } finally {
      checking = false;
    }
  };

  const ready = check();
  const timer = setInterval(() => void check(), Math.max(10, options.intervalMs));
  // The fallback must never keep a process alive on its own.
  timer.unref();

  return {
    ready,
    stop() {
      stopped = true;
      clearInterval(timer);
      unsubscribe?.();
    },
  };
}
