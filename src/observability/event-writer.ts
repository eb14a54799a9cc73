import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ObservabilityEvent, StoredEvent } from '../model/index.js';
import type { EventRollup, Store } from '../store/types.js';

/** Where buffered events go: the store itself, or a worker thread with its own connection. */
export interface EventWriter {
  readonly kind: 'inline' | 'worker';
  write(batch: ObservabilityEvent[]): Promise<void>;
  /** Adds non-match rollups to the stored ones. */
  writeRollups(rollups: EventRollup[]): Promise<void>;
  /** Deletes events and rollups older than `before` (ISO time); returns how many. */
  prune(before: string): Promise<number>;
  /** Finishes queued work and releases the thread; the store itself stays open. */
  close(): Promise<void>;
}

export function inlineWriter(store: Store): EventWriter {
  return {
    kind: 'inline',
    write: (batch) => store.insertEvents(batch),
    writeRollups: (rollups) => store.insertRollups(rollups),
    prune: (before) => store.pruneEvents(before),
    close: async () => undefined,
  };
}

/** Messages to the worker (event-writer-worker.ts) and its answers. */
export type WriterCommand =
  // Plain rows by structured clone: packing them saved only 1.1% of instructions per request (callgrind, realistic, 2026-12-06).
  | { op: 'insert'; events: StoredEvent[] }
  | { op: 'rollups'; rollups: EventRollup[] }
  | { op: 'prune'; before: string }
  | { op: 'close' };
export type WriterRequest = WriterCommand & { id: number };
export type WriterResponse = { id: number; ok: true; count: number } | { id: number; ok: false; error: string };

/** The compiled worker beside this module; null when running from TypeScript sources (tests). */
export function defaultWorkerUrl(): URL | null {
  if (!import.meta.url.endsWith('.js')) return null;
  const url = new URL('./event-writer-worker.js', import.meta.url);
  return existsSync(fileURLToPath(url)) ? url : null;
}

/**
 * Writes events from a worker thread holding its own connection to the same SQLite file.
 * better-sqlite3 is synchronous: on the main thread every batch (index updates, WAL
 * checkpoints) would pause request handling; in a worker it runs on another core and the
 * main thread only hands over the batch. SQLite's WAL mode lets the server read while the
 * worker writes. If the worker dies, writes fall back to the main store.
 */
export function workerWriter(opts: { sqlitePath: string; workerUrl: URL; fallback: Store }): EventWriter {
  const worker = new Worker(opts.workerUrl, { workerData: { sqlitePath: opts.sqlitePath } });
  // Idle, the worker must not keep the process alive; pending work holds it (ref below).
  worker.unref();
  const pending = new Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  let dead: Error | null = null;
  let closing: Promise<void> | null = null;

  const settleAll = (error: Error) => {
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };
  worker.on('message', (msg: WriterResponse) => {
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (pending.size === 0) worker.unref();
    if (msg.ok) p.resolve(msg.count);
    else p.reject(new Error(msg.error));
  });
  worker.on('error', (error) => {
    dead = error;
    settleAll(error);
  });
  worker.on('exit', (code) => {
    dead ??= new Error(`event writer worker exited with code ${code}`);
    settleAll(dead);
  });

  const call = (request: WriterCommand): Promise<number> =>
    new Promise<number>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ ...request, id });
    });

  return {
    get kind() {
      return dead ? ('inline' as const) : ('worker' as const);
    },
    async write(batch) {
      if (dead || closing) return opts.fallback.insertEvents(batch);
      await call({ op: 'insert', events: batch });
    },
    async writeRollups(rollups) {
      if (dead || closing) return opts.fallback.insertRollups(rollups);
      await call({ op: 'rollups', rollups });
    },
    async prune(before) {
      if (dead || closing) return opts.fallback.pruneEvents(before);
      return call({ op: 'prune', before });
    },
    close() {
      closing ??= (async () => {
        if (dead) return;
        try {
          await call({ op: 'close' });
        } catch {
          // Already gone: nothing left to finish.
        }
        await worker.terminate();
      })();
      return closing;
    },
  };
}
