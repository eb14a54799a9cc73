import type { ChangeSource } from '../store/types.js';
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
 * the agents a write touched, which are invalidated at once, and the store revision the
 * write produced. A periodic read of `store.revision()` catches what a notification could
 * miss: when the revision moved past one that no notification announced, everything is
 * invalidated. Counting announced revisions, rather than "some notification came since
 * the last check", matters when a notification arrives late, after the check that read
 * its revision: it must not cover for a later write whose notification was lost.
 * Without notifications for the writes it sees, every write (this replica's own
 * included) would drop every compiled set. After a failed check succeeds again (the
 * database came back) everything is invalidated once, whatever the revision says.
 */
export function startReplicaSync(
  store: ChangeSource,
  cache: Pick<ControlSetCache<unknown>, 'invalidate'>,
  options: ReplicaSyncOptions,
): ReplicaSync {
  let stopped = false;
  let lastRevision: number | null = null;
  let failing = false;
  let checking = false;
  // Revisions past lastRevision that a notification announced.
  const announced = new Set<number>();

  const unsubscribe = store.onChange((info) => {
    if (stopped) return;
    cache.invalidate(info.agents ?? 'all');
    // A notification without a revision (a replica of an earlier version) announces
    // nothing: the revision check then invalidates everything, as it must.
    if (info.revision !== undefined && (lastRevision === null || info.revision > lastRevision)) announced.add(info.revision);
  });

  /** Whether some revision in (from, to] was not announced. */
  const silentWriteBetween = (from: number, to: number): boolean => {
    let covered = 0;
    for (const r of announced) if (r > from && r <= to) covered++;
    return covered < to - from;
  };

  const check = async (): Promise<void> => {
    if (checking || stopped) return;
    checking = true;
    try {
      const revision = await store.revision();
      if (stopped) return;
      const moved = lastRevision !== null && revision !== lastRevision;
      // A revision that went down means the database was replaced: nothing is known.
      const silent = moved && (revision < lastRevision! || silentWriteBetween(lastRevision!, revision));
      if (failing || silent) cache.invalidate('all');
      for (const r of announced) if (r <= revision) announced.delete(r);
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
      unsubscribe();
    },
  };
}
