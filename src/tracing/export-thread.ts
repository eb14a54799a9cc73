/**
 * The OTLP/HTTP POST of span batches, made from a worker thread of its own. On the
 * server's thread the exporter's HTTP client ran through the same Node stream and HTTP
 * functions as the server's own connections, and the client's object shapes made them
 * polymorphic (V8 deoptimised Socket.resume, writeOrBuffer, Readable.read, Writable.cork):
 * every request paid for it, sampled or not. The batch is encoded on the server's thread
 * (span-export.ts) and handed here as bytes; the thread answers whether the collector took it.
 *
 * The thread never keeps the process alive by itself: it is held (ref) only while a POST
 * is in flight, as the socket of an in-thread request would be. `stop()` ends it.
 */
import { Worker } from 'node:worker_threads';

export interface ExportTarget {
  endpoint: string;
  /** Values may be credentials: they are never logged, here or in the thread. */
  headers: Readonly<Record<string, string>>;
  contentType: string;
  timeoutMs: number;
}

interface Reply {
  id: number;
  taken: boolean;
}

/**
 * The thread's code, plain JavaScript evaluated as its own script (no file to find next to
 * the compiled one; tests run from sources). One keep-alive connection, one request at a
 * time: taken when the collector answered 2xx within the timeout. Why a request failed is
 * not reported (the URL and the headers may hold credentials): the caller counts the drop.
 */
const POSTER = `
const { parentPort, workerData } = require('node:worker_threads');
const { endpoint, headers, contentType, timeoutMs } = workerData;
const url = new URL(endpoint);
const { Agent, request } = require(url.protocol === 'https:' ? 'node:https' : 'node:http');
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
parentPort.on('message', ({ id, body }) => {
  let done = false;
  let timer;
  const finish = (taken) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    parentPort.postMessage({ id, taken });
  };
  let req;
  try {
    req = request(url, { method: 'POST', agent, headers: { ...headers, 'content-type': contentType, 'content-length': body.byteLength } });
  } catch {
    // Node refuses some header values (characters past Latin-1) when the request is made.
    finish(false);
    return;
  }
  timer = setTimeout(() => {
    req.destroy();
    finish(false);
  }, timeoutMs);
  req.on('response', (res) => {
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    res.on('end', () => finish(ok));
    res.on('error', () => finish(false));
    res.resume();
  });
  req.on('error', () => finish(false));
  req.end(body);
});
`;

export class ExportThread {
  #worker: Worker | null = null;
  #next = 0;
  #stopped = false;
  readonly #waiting = new Map<number, (taken: boolean) => void>();

  constructor(private readonly target: ExportTarget) {}

  /** Resolves true when the collector took `body`, false otherwise (and after `stop()`); never rejects. */
  post(body: Buffer): Promise<boolean> {
    if (this.#stopped) return Promise.resolve(false);
    // Started with the first batch: a tracer that never samples has no thread.
    const worker = this.#worker ?? this.#start();
    const id = ++this.#next;
    return new Promise<boolean>((resolve) => {
      this.#waiting.set(id, resolve);
      worker.ref();
      worker.postMessage({ id, body });
    });
  }

  /** Ends the thread, resolving once it is gone; a POST in flight counts as not taken. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const worker = this.#worker;
    this.#worker = null;
    this.#settleAll();
    if (worker) await worker.terminate();
  }

  #start(): Worker {
    const worker = new Worker(POSTER, { eval: true, workerData: { ...this.target } });
    worker.unref();
    worker.on('message', ({ id, taken }: Reply) => {
      const resolve = this.#waiting.get(id);
      this.#waiting.delete(id);
      if (this.#waiting.size === 0) worker.unref();
      resolve?.(taken);
    });
    // A thread that failed is started afresh with the next batch; what it held is counted as failed.
    worker.on('error', () => this.#settleAll());
    worker.on('exit', () => {
      if (this.#worker === worker) this.#worker = null;
      this.#settleAll();
    });
    this.#worker = worker;
    return worker;
  }

  #settleAll(): void {
    for (const resolve of this.#waiting.values()) resolve(false);
    this.#waiting.clear();
  }
}
