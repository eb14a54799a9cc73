/**
 * PostgreSQL's own parser (libpg-query: the server's grammar compiled to WebAssembly), loaded
 * once, on first need (loadSqlParser). The SDK package lists libpg-query as an optional
 * dependency: when it is not installed, `missingParser` says why, and the sql evaluator
 * refuses its configs with that reason instead of letting an import fail.
 *
 * Short texts are parsed here, on the event loop; texts of OFFLOAD_MIN_CHARS or more on a
 * parse thread (parse-pool.ts), which also reads their facts when it can import the compiled
 * reader; otherwise they are read here in slices of READ_SLICE_CHARS of the tree's text with
 * the loop running in between. All give the same answers.
 */
import { createRequire } from 'node:module';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { answerBeforeParsing, errorOf, readBodies, readText, type Parsed, type ParseRequest } from './bodies.js';
import { callParser, callPlpgsql, PG_MODULE_PATH, type ParserAnswer, type PgModule } from './call-parser.js';
import { MAX_QUEUED, parsePool } from './parse-pool.js';
import type { ReadStatement } from './facts.js';
import { TreeReader } from './tree-reader.js';

export type { PgModule };

/**
 * Texts of this many characters or more are parsed on a thread. Measured (2026-11-25, a
 * loaded 2-core machine): a parse and read cost 0.3-0.8 µs a character of a long query
 * (a wide SELECT, an IN list: many nodes per character), a round trip to a thread 25-50 µs.
 * Below this bound an inline parse holds the loop for about a millisecond at most, which is
 * what a query agents send (a few hundred characters) never comes near; above it the hold
 * grows with the text, up to tens of milliseconds at the 64 KB limit.
 */
export const OFFLOAD_MIN_CHARS = 2048;

/** Characters of a long text's parse tree (its JSON) read per turn of the event loop: well under a millisecond each. */
export const READ_SLICE_CHARS = 32 * 1024;

const REQUIRED = ['_malloc', '_free', '_wasm_parse_query_raw', '_wasm_free_parse_result', '_wasm_parse_plpgsql', '_wasm_free_string', 'UTF8ToString'] as const;

/** Why the sql evaluator cannot run in this process (libpg-query is not installed), or null; known without loading it. */
export const missingParser: string | null = (() => {
  try {
    createRequire(import.meta.url).resolve(PG_MODULE_PATH);
    return null;
  } catch (err) {
    // require's message goes on with its require stack: the first line says what is missing.
    const why = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    return `the sql evaluator needs the package libpg-query (npm install libpg-query): ${why}`;
  }
})();

async function load(): Promise<PgModule | string> {
  if (missingParser !== null) return missingParser;
  try {
    const factory = createRequire(import.meta.url)(PG_MODULE_PATH) as () => Promise<PgModule>;
    const pg = await factory();
    const missing = REQUIRED.filter((name) => typeof pg[name] !== 'function');
    if (missing.length > 0 || !(pg.HEAPU8 instanceof Uint8Array)) throw new Error(`it does not export ${missing.join(', ') || 'HEAPU8'}`);
    return pg;
  } catch (err) {
    return unusable(err);
  }
}

/** The module as checked by a probe parse, or why it cannot be used. */
function probed(pg: PgModule): PgModule | string {
  try {
    // Both parsers: the DELETE is inside a PL/pgSQL body.
    const probe = parseSql(pg, 'DO $$ BEGIN DELETE FROM t; END $$');
    if (!probe.ok || probe.statements[0]?.unfiltered[0] !== 'delete') throw new Error('its parse of a probe query reads wrong');
    return pg;
  } catch (err) {
    return unusable(err);
  }
}

function unusable(err: unknown): string {
  let version = '?';
  try {
    version = (createRequire(import.meta.url)('libpg-query/package.json') as { version?: string }).version ?? '?';
  } catch {
    // The version only makes the message clearer.
  }
  return `the sql evaluator cannot use libpg-query ${version} (it is written for 18.1): ${err instanceof Error ? err.message : String(err)}`;
}

export type { Parsed };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A parse asked for by bodies.ts, on this thread. */
function answerHere(pg: PgModule, request: ParseRequest): ParserAnswer {
  return request.plpgsql ? callPlpgsql(pg, request.text, encoder, decoder) : callParser(pg, request.text, encoder, decoder);
}

/**
 * Parses `text` into the facts of each statement, bodies read, on the event loop. A syntax
 * error, or input the parser cannot hold (PostgreSQL's parser gives up on very deep nesting
 * with "memory exhausted"), is a parse failure; its message gives the position, never the text.
 */
export function parseSql(pg: PgModule, text: string): Parsed {
  const reading = readText(text, 0, { parses: 0 });
  let step = reading.next();
  while (step.done !== true) step = reading.next(answerHere(pg, step.value));
  return step.value;
}

/** Inline parses of a long text's bodies between two turns of the event loop. */
const INLINE_PER_TURN = 32;

/**
 * Long texts being parsed or read at most, in this process. The bound covers the whole way
 * (waiting for a thread, parsing, reading the facts on the loop), not only the wait for a
 * thread: a thread parses a 64 KB text in about 10 ms and its tree's JSON (about 1 MB) is
 * then read here, so a burst bounded only at the threads piles up on the loop instead.
 */
export const MAX_LONG_IN_FLIGHT = MAX_QUEUED;

let longInFlight = 0;
/** The same long text checked by several controls (or requests) at once is parsed once. */
const longParses = new Map<string, Promise<Parsed>>();

/**
 * parseSql with the text parsed on a parse thread and its facts read in slices; the same
 * answers. Rejects at once (an evaluator error, which on_error decides) when
 * MAX_LONG_IN_FLIGHT long texts are already under way.
 */
export function parseSqlAway(text: string): Promise<Parsed> {
  const early = answerBeforeParsing(text);
  if (early !== undefined) return Promise.resolve(early);
  const same = longParses.get(text);
  if (same !== undefined) return same;
  if (longInFlight >= MAX_LONG_IN_FLIGHT) {
    return Promise.reject(new Error(`${MAX_LONG_IN_FLIGHT} long SQL texts are already being parsed`));
  }
  longInFlight++;
  const parsing = parseAway(text).finally(() => {
    longInFlight--;
    longParses.delete(text);
  });
  longParses.set(text, parsing);
  return parsing;
}

async function parseAway(text: string): Promise<Parsed> {
  const answer = await parsePool().parseAndRead(text);
  let statements: readonly ReadStatement[];
  if ('statements' in answer) statements = answer.statements;
  else if ('tree' in answer) {
    const reader = new TreeReader(answer.tree);
    while (!reader.read(READ_SLICE_CHARS)) await nextTurn();
    statements = reader.statements();
  } else return { ok: false, error: errorOf(answer) };
  // Bodies: short ones parsed here, long ones on a thread, the loop let run between.
  const reading = readBodies(text, statements, 0, { parses: 1 });
  let step = reading.next();
  let inline = 0;
  while (step.done !== true) {
    const request = step.value;
    const pg = sqlParserNow();
    if (request.text.length < OFFLOAD_MIN_CHARS && typeof pg === 'object') {
      if (++inline % INLINE_PER_TURN === 0) await nextTurn();
      step = reading.next(answerHere(pg, request));
    } else {
      step = reading.next(await parsePool().parse(request.text, request.plpgsql));
    }
  }
  return { ok: true, statements: Object.freeze(step.value) };
}

let loading: Promise<PgModule | string> | undefined;
let loaded: PgModule | string | undefined;

/**
 * Loads the parser on this thread, once: the module instantiated, its exports checked and a
 * probe query parsed. Loaded on first need rather than at import: instantiating PostgreSQL's
 * parser takes about 100 ms and 10 MB, and its first parse touches about 20 MB more, which
 * a process without sql controls (the CLI, a server of regex and list controls) should not
 * pay. Resolves to the module, or to why it cannot be used.
 */
export function loadSqlParser(): Promise<PgModule | string> {
  loading ??= load().then((pg) => (loaded = typeof pg === 'string' ? pg : probed(pg)));
  return loading;
}

/** What loadSqlParser resolved to, once it has; undefined before. */
export function sqlParserNow(): PgModule | string | undefined {
  return loaded;
}

/** A bounded, least-recently-used cache of parses by text: repeated queries parse once. */
export class ParseCache {
  readonly #entries = new Map<string, Parsed>();
  constructor(
    readonly maxEntries = 512,
    /** Longer texts are not kept: they are rarely repeated and would hold memory. */
    readonly maxTextLength = 4096,
  ) {}

  get(text: string): Parsed | undefined {
    const hit = this.#entries.get(text);
    if (hit !== undefined) {
      this.#entries.delete(text);
      this.#entries.set(text, hit);
    }
    return hit;
  }

  set(text: string, parsed: Parsed): void {
    if (text.length > this.maxTextLength) return;
    this.#entries.set(text, parsed);
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }
}
