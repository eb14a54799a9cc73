/**
 * Parses of long SQL texts, run on worker threads. PostgreSQL's parser costs about half a
 * microsecond per character of a long query (a generated IN list, a wide SELECT): a 60 KB
 * text would hold the event loop, and with it every other request, for tens of
 * milliseconds. Texts of OFFLOAD_MIN_CHARS or more are therefore parsed here; shorter ones
 * stay on the loop, where a parse costs less than the round trip to a thread.
 *
 * Each thread loads the WebAssembly module once, on start, and answers with the parser's
 * JSON text; the facts are read from it on the loop by TreeReader, in slices between which
 * the loop runs (parser.ts). Threads are started on first use and kept referenced only
 * while they work (an idle pool never keeps a process alive). At most MAX_QUEUED parses
 * wait for a thread: beyond that a parse fails at once, an evaluator error which the
 * control's on_error decides, rather than letting a burst of long queries queue for ever.
 * A parse still running after PARSE_TIMEOUT_MS fails too, and its thread is replaced.
 */
import { createRequire } from 'node:module';
import { ThreadPool } from '../threads.js';
import { callParser, callPlpgsql, PG_MODULE_PATH, type ParserAnswer } from './call-parser.js';

/** A parse still running after this is stopped and fails (a 64 KB text takes tens of ms). */
export const PARSE_TIMEOUT_MS = 10_000;

/** Parses waiting for a thread at most. */
export const MAX_QUEUED = 64;

// The thread's code (see ../threads.ts); callParser and callPlpgsql are self-contained and sent as their source.
const threadSource = () => `
const { parentPort, workerData } = require('node:worker_threads');
const callParser = ${callParser.toString()};
const callPlpgsql = ${callPlpgsql.toString()};
const ready = require(workerData.module)();
const encoder = new TextEncoder();
const decoder = new TextDecoder();
parentPort.on('message', ({ id, job }) => {
  ready.then((pg) => parentPort.postMessage({ id, answer: (job.plpgsql ? callPlpgsql : callParser)(pg, job.text, encoder, decoder) }))
    .catch((err) => parentPort.postMessage({ id, error: String((err && err.message) || err) }));
});
`;

export interface ParsePoolOptions {
  /** Threads at most (default: 2, or 1 on a single core). */
  size?: number;
  /** Default PARSE_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Default MAX_QUEUED. */
  maxQueued?: number;
}

export class ParsePool {
  readonly #pool: ThreadPool<{ text: string; plpgsql: boolean }, ParserAnswer>;

  constructor(options: ParsePoolOptions = {}) {
    this.#pool = new ThreadPool({
      name: 'SQL parse',
      source: threadSource,
      workerData: () => ({ module: createRequire(import.meta.url).resolve(PG_MODULE_PATH) }),
      size: options.size,
      timeoutMs: options.timeoutMs ?? PARSE_TIMEOUT_MS,
      maxQueued: options.maxQueued ?? MAX_QUEUED,
      queueFull: (max) => `${max} long SQL texts are already waiting for a parse thread`,
    });
  }

  /**
   * The parser's answer for `text` (with `plpgsql`, its PL/pgSQL bodies'), from a thread;
   * rejects when the queue is full, or the parse fails or times out.
   */
  parse(text: string, plpgsql = false): Promise<ParserAnswer> {
    return this.#pool.run({ text, plpgsql });
  }

  /** Ends every thread; pending parses fail. */
  close(): Promise<void> {
    return this.#pool.close();
  }
}

let shared: ParsePool | undefined;

/** The process's pool, started on first use. */
export function parsePool(): ParsePool {
  shared ??= new ParsePool();
  return shared;
}
