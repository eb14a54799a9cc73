/**
 * One call into libpg-query's WebAssembly module (wasm/libpg-query.js, an Emscripten
 * module): the text in, the parser's JSON text or its error out. The package's own
 * parseSync does the same and then builds the tree with JSON.parse; the sql evaluator reads
 * facts from the text instead (facts.ts). This leans on the module's layout (its exports,
 * the result structs of wasm_parse_query_raw), which parser.ts checks when it loads.
 */

import type { TextDecoder, TextEncoder } from 'node:util';

/** The Emscripten module, as far as it is used here. */
export interface PgModule {
  HEAPU8: Uint8Array;
  HEAPU32: Uint32Array;
  _malloc(size: number): number;
  _free(pointer: number): void;
  _wasm_parse_query_raw(query: number): number;
  _wasm_free_parse_result(result: number): void;
  _wasm_parse_plpgsql(query: number): number;
  _wasm_free_string(result: number): void;
  UTF8ToString(pointer: number): string;
}

/** Where the module's factory is: a CommonJS file, required the same way on the loop and by parse threads. */
export const PG_MODULE_PATH = 'libpg-query/wasm/libpg-query.js';

/** The parse tree as JSON text, or the parser's error (`cursor`: its 1-based character position, 0 for none). */
export type ParserAnswer = { tree: string } | { message: string; cursor: number };

/**
 * Parses `text` (no NUL characters: the parser reads a C string). Self-contained, referring
 * to nothing outside itself: parse threads run its source (parse-pool.ts).
 */
export function callParser(pg: PgModule, text: string, encoder: TextEncoder, decoder: TextDecoder): ParserAnswer {
  const size = Buffer.byteLength(text, 'utf8') + 1;
  const query = pg._malloc(size);
  if (query === 0) throw new Error('the SQL parser is out of memory');
  try {
    // The heap's views are replaced when it grows: read them again after each call into the module.
    const { written } = encoder.encodeInto(text, pg.HEAPU8.subarray(query, query + size - 1));
    pg.HEAPU8[query + written] = 0;
    const result = pg._wasm_parse_query_raw(query);
    if (result === 0) throw new Error('the SQL parser is out of memory');
    try {
      // struct PgQueryParseResult { char *parse_tree; char *stderr_buffer; PgQueryError *error; }
      const words = pg.HEAPU32;
      const tree = words[result >>> 2]!;
      const error = words[(result >>> 2) + 2]!;
      if (error !== 0) {
        // struct PgQueryError { char *message; char *funcname; char *filename; int lineno; int cursorpos; ... }
        return { message: pg.UTF8ToString(words[error >>> 2]!), cursor: words[(error >>> 2) + 4]! | 0 };
      }
      if (tree === 0) throw new Error('the SQL parser gave no tree');
      const heap = pg.HEAPU8;
      return { tree: decoder.decode(heap.subarray(tree, heap.indexOf(0, tree))) };
    } finally {
      pg._wasm_free_parse_result(result);
    }
  } finally {
    pg._free(query);
  }
}

/**
 * Parses the PL/pgSQL bodies of `text` (a DO or CREATE FUNCTION statement): their JSON text
 * (`{"plpgsql_funcs":[...]}`), or the parser's error (cursor 0). Self-contained, like callParser.
 */
export function callPlpgsql(pg: PgModule, text: string, encoder: TextEncoder, decoder: TextDecoder): ParserAnswer {
  const size = Buffer.byteLength(text, 'utf8') + 1;
  const query = pg._malloc(size);
  if (query === 0) throw new Error('the SQL parser is out of memory');
  try {
    const { written } = encoder.encodeInto(text, pg.HEAPU8.subarray(query, query + size - 1));
    pg.HEAPU8[query + written] = 0;
    const result = pg._wasm_parse_plpgsql(query);
    if (result === 0) throw new Error('the SQL parser is out of memory');
    try {
      const heap = pg.HEAPU8;
      const answer = decoder.decode(heap.subarray(result, heap.indexOf(0, result)));
      // A parse is a JSON object; anything else is the parser's error message.
      return answer.startsWith('{') ? { tree: answer } : { message: answer, cursor: 0 };
    } finally {
      pg._wasm_free_string(result);
    }
  } finally {
    pg._free(query);
  }
}
