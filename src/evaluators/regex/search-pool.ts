/**
 * Regex searches of long texts, run on worker threads. RE2's work is linear in the text,
 * and the program size limit (re2.ts) bounds its factor, but on a text of hundreds of KB the
 * worst pattern allowed still takes a good part of a second: on the event loop that would
 * hold every other request, /health included. Texts of OFFLOAD_MIN_BYTES (re2.ts) or more are
 * therefore searched here, off the loop; shorter ones stay on it, where a call into RE2
 * costs microseconds and a round trip to a thread would cost more than the search.
 *
 * A search that runs longer than SEARCH_TIMEOUT_MS is stopped and fails (../threads.ts has
 * how the pool runs its threads). A thread inside RE2 stops when that call returns (a
 * native call cannot be interrupted), which the program size limit keeps short. Threads
 * share nothing but the messages: each compiles the patterns it is sent, once.
 */
import { createRequire } from 'node:module';
import { ThreadPool } from '../threads.js';

/** A search still running after this is stopped and fails. */
export const SEARCH_TIMEOUT_MS = 10_000;

/** Where the match starts and ends, in bytes of the text sent; null when nothing matches. */
export type SearchResult = { at: number; to: number } | null;

// The thread's code (see ../threads.ts): each program compiled once per thread.
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const RE2 = require(workerData.re2);
const programs = new Map();
function programOf(pattern) {
  let p = programs.get(pattern);
  if (p === undefined) {
    if (programs.size >= 256) programs.delete(programs.keys().next().value);
    const re = new RE2(pattern, 'u');
    p = { re, sticky: new RE2(re, re.flags + 'y') };
    programs.set(pattern, p);
  }
  return p;
}
parentPort.on('message', ({ id, job: { pattern, bytes } }) => {
  try {
    const { re, sticky } = programOf(pattern);
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const at = re.search(text);
    if (at < 0) return parentPort.postMessage({ id, answer: null });
    sticky.lastIndex = at;
    const to = sticky.test(text) ? sticky.lastIndex : at;
    parentPort.postMessage({ id, answer: { at, to } });
  } catch (err) {
    parentPort.postMessage({ id, error: String(err && err.message || err) });
  }
});
`;

export interface SearchPoolOptions {
  /** Threads at most (default: 2, or 1 on a single core). */
  size?: number;
  /** Default SEARCH_TIMEOUT_MS. */
  timeoutMs?: number;
}

export class SearchPool {
  readonly #pool: ThreadPool<{ pattern: string; bytes: Uint8Array }, SearchResult>;

  constructor(options: SearchPoolOptions = {}) {
    this.#pool = new ThreadPool({
      name: 'regex search',
      source: () => THREAD_SOURCE,
      workerData: () => ({ re2: createRequire(import.meta.url).resolve('re2') }),
      size: options.size,
      timeoutMs: options.timeoutMs ?? SEARCH_TIMEOUT_MS,
      transfer: (job) => [job.bytes.buffer as ArrayBuffer],
    });
  }

  /** Searches `bytes` (UTF-8) for `pattern` on a thread; rejects when the search fails or times out. */
  search(pattern: string, bytes: Uint8Array): Promise<SearchResult> {
    // A copy: the caller's buffer may be shared (the step's memo), and the copy can be
    // moved to the thread instead of copied again.
    return this.#pool.run({ pattern, bytes: new Uint8Array(bytes) });
  }

  /** Ends every thread; pending searches fail. */
  close(): Promise<void> {
    return this.#pool.close();
  }
}

let shared: SearchPool | undefined;

/** The process's pool, started on first use. */
export function searchPool(): SearchPool {
  shared ??= new SearchPool();
  return shared;
}
