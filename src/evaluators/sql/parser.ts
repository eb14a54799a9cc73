/**
 * PostgreSQL's own parser (libpg-query: the server's grammar compiled to WebAssembly), loaded
 * once when this module is imported. The SDK package lists libpg-query as an optional
 * dependency: when it is not installed, `parser` holds why, and the sql evaluator refuses
 * its configs with that reason instead of letting the import fail.
 */
import { factsOf, type StatementFacts } from './facts.js';

interface PgQuery {
  loadModule(): Promise<void>;
  parseSync(query: string): { stmts?: Array<{ stmt?: Record<string, unknown> }> };
}

async function load(): Promise<PgQuery | string> {
  try {
    const mod = (await import('libpg-query')) as unknown as PgQuery;
    await mod.loadModule();
    return mod;
  } catch (err) {
    return `the sql evaluator needs the package libpg-query (npm install libpg-query): ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** The loaded parser, or why there is none. */
export const parser: PgQuery | string = await load();

export type Parsed = { ok: true; statements: readonly StatementFacts[] } | { ok: false; error: string };

const NO_STATEMENTS: Parsed = Object.freeze({ ok: true, statements: Object.freeze([]) });

/**
 * Parses `text` into the facts of each statement. A syntax error, or input the parser cannot
 * hold (PostgreSQL's parser gives up on very deep nesting with "memory exhausted"), is a
 * parse failure; its message gives the position, never the text.
 */
export function parseSql(pg: PgQuery, text: string): Parsed {
  // The parser refuses empty input; blank text holds no statement.
  if (text.trim() === '') return NO_STATEMENTS;
  let tree: ReturnType<PgQuery['parseSync']>;
  try {
    tree = pg.parseSync(text);
  } catch (err) {
    return { ok: false, error: failureOf(err) };
  }
  const statements = (tree.stmts ?? []).map((s) => Object.freeze(factsOf(s.stmt ?? {})));
  return { ok: true, statements: Object.freeze(statements) };
}

function failureOf(err: unknown): string {
  const details = (err as { sqlDetails?: { message?: unknown; cursorPosition?: unknown } }).sqlDetails;
  const raw = typeof details?.message === 'string' ? details.message : err instanceof Error ? err.message : String(err);
  // "syntax error at or near "DROPP"": the quoted part is the guarded text; keep the kind of error only.
  const what = raw.replace(/\s+at or near\s+".*$/s, '').replace(/\s+at end of input$/, ' at the end');
  const at = typeof details?.cursorPosition === 'number' ? ` at character ${details.cursorPosition + 1}` : '';
  return `${what}${at}`;
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

export type { PgQuery };
