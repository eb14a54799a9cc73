/**
 * Which controls the server runs itself (`execution: server`), for event ingest: their
 * events are written by the server as it evaluates, so an ingested event naming one can
 * only pass a client's figures off as the server's (a read key inflating a shadow report).
 * The ids are read from the store at most every 10 s, and at most once a second more when
 * an event names a control not seen yet. While the store cannot be read (a database
 * outage) the last list read is used, so that ingest keeps acknowledging events into the
 * buffer as it does for the server's own.
 */
import type { Store } from '../store/types.js';

const FRESH_MS = 10_000;
const MISS_REFRESH_MS = 1000;

export function serverRunControlsOf(store: Pick<Store, 'listAllControls'>): (controlIds: readonly number[]) => Promise<ReadonlySet<number>> {
  let known = new Map<number, boolean>();
  let at = 0;
  const refresh = async () => {
    try {
      known = new Map((await store.listAllControls()).map((c) => [c.control_id, c.data !== null && c.data.execution === 'server'] as const));
      at = Date.now();
    } catch {
      // Asked again after MISS_REFRESH_MS at the earliest, not on every request of an outage.
      at = Date.now() - FRESH_MS + MISS_REFRESH_MS;
    }
  };
  return async (controlIds) => {
    const age = Date.now() - at;
    if (age > FRESH_MS || (age > MISS_REFRESH_MS && controlIds.some((id) => !known.has(id)))) await refresh();
    const serverRun = new Set<number>();
    for (const id of controlIds) if (known.get(id) === true) serverRun.add(id);
    return serverRun;
  };
}
