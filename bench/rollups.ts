import { NonMatchRollups } from '../src/observability/non-match-rollups.js';
import type { ObservabilityEvent } from '../src/model/index.js';
import type { Store } from '../src/store/types.js';

/**
 * Non-matches rolled up exactly as the server does it (src/observability's NonMatchRollups),
 * for benchmarks that fill a store with a realistic mix. Unlike the server, a failed write
 * fails the benchmark.
 */
export function benchRollups(store: Store) {
  let rows = 0;
  let failure: Error | null = null;
  const rollups = new NonMatchRollups({
    maxKeys: Number.MAX_SAFE_INTEGER,
    async write(all) {
      rows += all.length;
      for (let i = 0; i < all.length; i += 1000) await store.insertRollups(all.slice(i, i + 1000));
    },
    onWriteError: (error) => (failure = error instanceof Error ? error : new Error(JSON.stringify(error))),
  });
  return {
    add: (e: ObservabilityEvent) => rollups.add(Date.parse(e.timestamp), e, e.execution_duration_ms),
    /** Writes what was added; returns the rollup rows stored. */
    async finish(): Promise<number> {
      await rollups.flush();
      if (failure !== null) throw failure;
      return rows;
    },
  };
}
