/**
 * Regex searches of long texts, run on worker threads. RE2's work is linear in the text,
 * and the program size limit (re2.ts) bounds its factor, but on a text of hundreds of KB the
 * worst pattern allowed still takes a good part of a second: on the event loop that would
 * hold every other request, /health included. Texts of OFFLOAD_MIN_BYTES (re2.ts) or more are
 * therefore searched here, off the loop; shorter ones stay on it, where a call into RE2
 * costs microseconds and a round trip to a thread would cost more than the search.
 *
 * A search that runs longer than SEARCH_TIMEOUT_MS is stopped (its thread is ended and
 * replaced) and fails: an evaluator error, which the control's on_error decides (deny
 * controls fail closed by default). Threads are started on first use, kept referenced only
 * while they have work (an idle pool never keeps a process alive) and share nothing but
 * the messages: each compiles the patterns it is sent, once.
 */
import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** A search still running after this is stopped and fails. */
export const SEARCH_TIMEOUT_MS = 10_000;

/** Where the match starts and ends, in bytes of the text sent; null when nothing matches. */
export type SearchResult = { at: number; to: number } | null;

// The thread's code, run as CommonJS (eval), so that the same source works from the
// compiled package and from the TypeScript sources the tests run.
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
parentPort.on('message', ({ id, pattern, bytes }) => {
  try {
    const { re, sticky } = programOf(pattern);
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const at = re.search(text);
    if (at < 0) return parentPort.postMessage({ id, result: null });
    sticky.lastIndex = at;
    const to = sticky.test(text) ? sticky.lastIndex : at;
    parentPort.postMessage({ id, result: { at, to } });
  } catch (err) {
    parentPort.postMessage({ id, error: String(err && err.message || err) });
  }
});
`;

interface Task {
  id: number;
  pattern: string;
  bytes: Uint8Array;
  resolve(result: SearchResult): void;
  reject(error: Error): void;
}

interface Thread {
  worker: Worker;
  /** Started: a task's time runs from here, not from while the thread was starting. */
  online: boolean;
  task: Task | null;
  timer: NodeJS.Timeout | null;
}

export interface SearchPoolOptions {
  /** Threads at most (default: 2, or 1 on a single core). */
  size?: number;
  /** Default SEARCH_TIMEOUT_MS. */
  timeoutMs?: number;
}

export class SearchPool {
  readonly #size: number;
  readonly #timeoutMs: number;
  readonly #threads: Thread[] = [];
  readonly #queue: Task[] = [];
  #nextId = 1;
  #re2Path: string | undefined;

  constructor(options: SearchPoolOptions = {}) {
    this.#size = options.size ?? Math.max(1, Math.min(2, availableParallelism()));
    this.#timeoutMs = options.timeoutMs ?? SEARCH_TIMEOUT_MS;
  }

  /** Searches `bytes` (UTF-8) for `pattern` on a thread; rejects when the search fails or times out. */
  search(pattern: string, bytes: Uint8Array): Promise<SearchResult> {
    return new Promise((resolve, reject) => {
      // A copy: the caller's buffer may be shared (the step's memo), and the copy can be
      // moved to the thread instead of copied again.
      this.#queue.push({ id: this.#nextId++, pattern, bytes: new Uint8Array(bytes), resolve, reject });
      this.#dispatch();
    });
  }

  /** Ends every thread; pending searches fail. */
  async close(): Promise<void> {
    for (const task of this.#queue.splice(0)) task.reject(new Error('regex search pool closed'));
    await Promise.all([...this.#threads].map((t) => this.#end(t, new Error('regex search pool closed'))));
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let thread = this.#threads.find((t) => t.task === null);
      if (thread === undefined) {
        if (this.#threads.length >= this.#size) return;
        thread = this.#start();
      }
      this.#run(thread, this.#queue.shift()!);
    }
  }

  #start(): Thread {
    this.#re2Path ??= createRequire(import.meta.url).resolve('re2');
    const worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { re2: this.#re2Path } });
    const thread: Thread = { worker, online: false, task: null, timer: null };
    worker.unref();
    worker.on('online', () => {
      thread.online = true;
      if (thread.task !== null) this.#startTimer(thread);
    });
    worker.on('message', (m: { id: number; result?: SearchResult; error?: string }) => {
      const task = thread.task;
      if (task === null || task.id !== m.id) return;
      this.#finish(thread);
      if (m.error !== undefined) task.reject(new Error(`regex search failed: ${m.error}`));
      else task.resolve(m.result ?? null);
      this.#dispatch();
    });
    worker.on('error', (err) => this.#replace(thread, err));
    worker.on('exit', () => this.#replace(thread, new Error('regex search thread exited')));
    this.#threads.push(thread);
    return thread;
  }

  #run(thread: Thread, task: Task): void {
    thread.task = task;
    // Referenced while it works: a process waiting for a search does not exit under it.
    thread.worker.ref();
    if (thread.online) this.#startTimer(thread);
    thread.worker.postMessage({ id: task.id, pattern: task.pattern, bytes: task.bytes }, [task.bytes.buffer as ArrayBuffer]);
  }

  #startTimer(thread: Thread): void {
    thread.timer = setTimeout(() => {
      void this.#end(thread, new Error(`regex search stopped after ${this.#timeoutMs} ms`));
      this.#dispatch();
    }, this.#timeoutMs);
    thread.timer.unref();
  }

  #finish(thread: Thread): void {
    if (thread.timer !== null) clearTimeout(thread.timer);
    thread.timer = null;
    thread.task = null;
    thread.worker.unref();
  }

  /**
   * Ends a thread (its task, if any, fails with `reason`) and forgets it at once, so that
   * queued work gets a new thread. A thread inside RE2 stops when that call returns (a
   * native call cannot be interrupted), which the program size limit keeps short.
   */
  #end(thread: Thread, reason: Error): Promise<number> {
    const task = thread.task;
    this.#finish(thread);
    const i = this.#threads.indexOf(thread);
    if (i >= 0) this.#threads.splice(i, 1);
    thread.worker.removeAllListeners();
    task?.reject(reason);
    return thread.worker.terminate();
  }

  /** A thread that failed or exited: its task fails, and queued work gets a new thread. */
  #replace(thread: Thread, error: Error): void {
    if (!this.#threads.includes(thread)) return;
    void this.#end(thread, error);
    this.#dispatch();
  }
}

let shared: SearchPool | undefined;

/** The process's pool, started on first use. */
export function searchPool(): SearchPool {
  shared ??= new SearchPool();
  return shared;
}
