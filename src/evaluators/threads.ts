/**
 * Worker threads of the evaluators (regex/search-pool.ts, sql/parse-pool.ts): a pool that
 * runs one job at a time per thread, for work too long for the event loop.
 *
 * Threads run CommonJS source given as text, so that the same source works from the
 * compiled package and from the TypeScript sources the tests run. They are started on
 * first use and kept referenced only while they have work (an idle pool never keeps a
 * process alive). A job still running after `timeoutMs` is stopped (its thread is ended
 * and replaced) and fails: an evaluator error, which the control's on_error decides (deny
 * controls fail closed by default). With `maxQueued`, a job that finds that many waiting
 * fails at once rather than queueing behind them.
 */
import { availableParallelism } from 'node:os';
import { Worker, type Transferable } from 'node:worker_threads';

/**
 * The process's flags, for a thread that runs CommonJS source: without --input-type, which
 * a thread inherits (`node --input-type=module -e ...`) and which would make it read the
 * source as a module, where require is not defined.
 */
export function commonJsExecArgv(): string[] {
  const out: string[] = [];
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--input-type') i++;
    else if (!args[i]!.startsWith('--input-type=')) out.push(args[i]!);
  }
  return out;
}

export interface ThreadPoolSpec<Job> {
  /** The work as messages name it: `regex search`, `SQL parse`. */
  name: string;
  /**
   * The thread's CommonJS source: it answers each message `{id, job}` with `{id, answer}`
   * or `{id, error}` (a string). Asked for when the first thread starts.
   */
  source(): string;
  /** The thread's workerData, asked for with the source. */
  workerData(): unknown;
  /** Threads at most (default: 2, or 1 on a single core). */
  size?: number | undefined;
  timeoutMs: number;
  /** Jobs waiting for a thread at most (default: no limit). */
  maxQueued?: number | undefined;
  /** Why a job that found the queue full failed. */
  queueFull?(maxQueued: number): string;
  /** What of a job is moved to the thread rather than copied. */
  transfer?(job: Job): Transferable[];
}

interface Task<Job, Answer> {
  id: number;
  job: Job;
  resolve(answer: Answer): void;
  reject(error: Error): void;
}

interface Thread<Job, Answer> {
  worker: Worker;
  /** Started: a job's time runs from here, not from while the thread was starting. */
  online: boolean;
  task: Task<Job, Answer> | null;
  timer: NodeJS.Timeout | null;
}

export class ThreadPool<Job, Answer> {
  readonly #spec: ThreadPoolSpec<Job>;
  readonly #size: number;
  readonly #maxQueued: number;
  readonly #threads: Thread<Job, Answer>[] = [];
  readonly #queue: Task<Job, Answer>[] = [];
  #nextId = 1;
  #start: { source: string; workerData: unknown } | undefined;

  constructor(spec: ThreadPoolSpec<Job>) {
    this.#spec = spec;
    this.#size = spec.size ?? Math.max(1, Math.min(2, availableParallelism()));
    this.#maxQueued = spec.maxQueued ?? Infinity;
  }

  /** The thread's answer to `job`; rejects when the queue is full, or the job fails or times out. */
  run(job: Job): Promise<Answer> {
    return new Promise((resolve, reject) => {
      if (this.#queue.length >= this.#maxQueued) {
        reject(new Error(this.#spec.queueFull?.(this.#maxQueued) ?? `${this.#maxQueued} ${this.#spec.name} jobs are already waiting for a thread`));
        return;
      }
      this.#queue.push({ id: this.#nextId++, job, resolve, reject });
      this.#dispatch();
    });
  }

  /** Ends every thread; pending jobs fail. */
  async close(): Promise<void> {
    const closed = () => new Error(`${this.#spec.name} pool closed`);
    for (const task of this.#queue.splice(0)) task.reject(closed());
    await Promise.all([...this.#threads].map((t) => this.#end(t, closed())));
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let thread = this.#threads.find((t) => t.task === null);
      if (thread === undefined) {
        if (this.#threads.length >= this.#size) return;
        thread = this.#newThread();
      }
      this.#run(thread, this.#queue.shift()!);
    }
  }

  #newThread(): Thread<Job, Answer> {
    this.#start ??= { source: this.#spec.source(), workerData: this.#spec.workerData() };
    const worker = new Worker(this.#start.source, { eval: true, execArgv: commonJsExecArgv(), workerData: this.#start.workerData });
    const thread: Thread<Job, Answer> = { worker, online: false, task: null, timer: null };
    worker.unref();
    worker.on('online', () => {
      thread.online = true;
      if (thread.task !== null) this.#startTimer(thread);
    });
    worker.on('message', (m: { id: number; answer?: Answer; error?: string }) => {
      const task = thread.task;
      if (task === null || task.id !== m.id) return;
      this.#finish(thread);
      if (m.error !== undefined) task.reject(new Error(`${this.#spec.name} failed: ${m.error}`));
      else task.resolve(m.answer as Answer);
      this.#dispatch();
    });
    worker.on('error', (err) => this.#replace(thread, err));
    worker.on('exit', () => this.#replace(thread, new Error(`${this.#spec.name} thread exited`)));
    this.#threads.push(thread);
    return thread;
  }

  #run(thread: Thread<Job, Answer>, task: Task<Job, Answer>): void {
    thread.task = task;
    // Referenced while it works: a process waiting for a job does not exit under it.
    thread.worker.ref();
    if (thread.online) this.#startTimer(thread);
    thread.worker.postMessage({ id: task.id, job: task.job }, this.#spec.transfer?.(task.job) ?? []);
  }

  #startTimer(thread: Thread<Job, Answer>): void {
    thread.timer = setTimeout(() => {
      void this.#end(thread, new Error(`${this.#spec.name} stopped after ${this.#spec.timeoutMs} ms`));
      this.#dispatch();
    }, this.#spec.timeoutMs);
    thread.timer.unref();
  }

  #finish(thread: Thread<Job, Answer>): void {
    if (thread.timer !== null) clearTimeout(thread.timer);
    thread.timer = null;
    thread.task = null;
    thread.worker.unref();
  }

  /**
   * Ends a thread (its job, if any, fails with `reason`) and forgets it at once, so that
   * queued work gets a new thread. A thread inside a native call (RE2, the WebAssembly
   * parser) stops when that call returns.
   */
  #end(thread: Thread<Job, Answer>, reason: Error): Promise<number> {
    const task = thread.task;
    this.#finish(thread);
    const i = this.#threads.indexOf(thread);
    if (i >= 0) this.#threads.splice(i, 1);
    thread.worker.removeAllListeners();
    task?.reject(reason);
    return thread.worker.terminate();
  }

  /** A thread that failed or exited: its job fails, and queued work gets a new thread. */
  #replace(thread: Thread<Job, Answer>, error: Error): void {
    if (!this.#threads.includes(thread)) return;
    void this.#end(thread, error);
    this.#dispatch();
  }
}
