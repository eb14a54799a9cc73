/**
 * Parses of long SQL texts, run on worker threads. PostgreSQL's parser costs about half a
 * microsecond per character of a long query (a generated IN list, a wide SELECT): a 60 KB
 * text would hold the event loop, and with it every other request, for tens of
 * milliseconds. Texts of OFFLOAD_MIN_CHARS or more are therefore parsed here; shorter ones
 * stay on the loop, where a parse costs less than the round trip to a thread.
 *
 * Each thread loads the WebAssembly module once, on start. Asked to `read`, it also reads
 * the statements' facts from the tree (tree-reader.ts, imported by the thread from the
 * compiled package) and answers with them: a 64 KB text's tree is about 1 MB of JSON, which
 * would otherwise be copied to the loop and read there. Where the compiled reader is not
 * beside this file (the TypeScript sources, run by the tests), the thread answers with the
 * JSON text, and the facts are read on the loop in slices (parser.ts): the same reader, the
 * same facts. Threads are started on first use and kept referenced only
 * while they work (an idle pool never keeps a process alive). At most MAX_QUEUED parses
 * wait for a thread: beyond that a parse fails at once, an evaluator error which the
 * control's on_error decides, rather than letting a burst of long queries queue for ever.
 * A parse still running after PARSE_TIMEOUT_MS fails too, and its thread is replaced.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ThreadPool } from '../threads.js';
import { callParser, callPlpgsql, PG_MODULE_PATH, type ParserAnswer } from './call-parser.js';
import type { ReadStatement } from './facts.js';

/** A thread's answer: the parser's, or (asked to read, and able to) the facts of the text's statements. */
export type PoolAnswer = ParserAnswer | { statements: ReadStatement[] };

/** The compiled tree reader for the threads to import, when there is one beside this file. */
function readerModule(): string | null {
  const url = new URL('./tree-reader.js', import.meta.url);
  return url.protocol === 'file:' && existsSync(fileURLToPath(url)) ? url.href : null;
}

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
const reader = workerData.reader === null ? Promise.resolve(null) : import(workerData.reader).then((m) => m.readTree);
const encoder = new TextEncoder();
const decoder = new TextDecoder();
parentPort.on('message', ({ id, job }) => {
  Promise.all([ready, reader]).then(([pg, readTree]) => {
    const answer = (job.plpgsql ? callPlpgsql : callParser)(pg, job.text, encoder, decoder);
    parentPort.postMessage({ id, answer: job.read && readTree !== null && 'tree' in answer ? { statements: readTree(answer.tree) } : answer });
  }).catch((err) => parentPort.postMessage({ id, error: String((err && err.message) || err) }));
});
`;

export interface ParsePoolOptions {
  /** Threads at most (default: 2, or 1 on a single core). */
  size?: number;
  /** Default PARSE_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Default MAX_QUEUED. */
  maxQueued?: number;
  /** The tree reader module's URL for the threads to import, null for none; default: the compiled one beside this file, if any. */
  readerModule?: string | null;
}

export class ParsePool {
  readonly #pool: ThreadPool<{ text: string; plpgsql: boolean; read: boolean }, PoolAnswer>;

  constructor(options: ParsePoolOptions = {}) {
    this.#pool = new ThreadPool({
      name: 'SQL parse',
      source: threadSource,
      workerData: () => ({ module: createRequire(import.meta.url).resolve(PG_MODULE_PATH), reader: options.readerModule === undefined ? readerModule() : options.readerModule }),
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
    return this.#pool.run({ text, plpgsql, read: false }) as Promise<ParserAnswer>;
  }

  /** The facts of `text`'s statements read on the thread, or the parser's answer when the thread has no reader. */
  parseAndRead(text: string): Promise<PoolAnswer> {
    return this.#pool.run({ text, plpgsql: false, read: true });
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
