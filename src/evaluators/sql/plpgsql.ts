/**
 * PURE: the SQL a PL/pgSQL body runs, from libpg-query's PL/pgSQL parse (JSON text): every
 * embedded statement and expression (PERFORM, RETURN QUERY, IF conditions, assignments,
 * DECLARE defaults, cursor queries), each as SQL text the main parser reads; and each
 * dynamic query (EXECUTE, FOR ... IN EXECUTE, OPEN ... FOR EXECUTE, RETURN QUERY EXECUTE) as
 * its expression, which bodies.ts reads only when it is a constant string.
 */
import { isNode } from './nodes.js';

export type Piece = { kind: 'sql'; text: string } | { kind: 'dynamic'; expression: string };

/** Statements whose `query` is run as a string built at run time. */
const DYNAMIC_QUERY = new Set(['PLpgSQL_stmt_dynexecute', 'PLpgSQL_stmt_dynfors']);

// src/include/parser/parser.h RawParseMode: the form of an embedded expression's text.
const RAW_PARSE_DEFAULT = 0;
const RAW_PARSE_TYPE_NAME = 1;
const RAW_PARSE_PLPGSQL_ASSIGN1 = 3;
const RAW_PARSE_PLPGSQL_ASSIGN3 = 5;

/** The pieces of SQL of each function in `json` (`{"plpgsql_funcs":[...]}`), in the order written. */
export function piecesOfPlpgsql(json: string): Piece[] {
  const pieces: Piece[] = [];
  // An explicit stack: a body nested deep enough must not overflow the call stack.
  const stack: Array<{ value: unknown; key: string; statement: string }> = [{ value: JSON.parse(json) as unknown, key: '', statement: '' }];
  while (stack.length > 0) {
    const { value, key, statement } = stack.pop()!;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], key, statement });
      continue;
    }
    if (!isNode(value)) continue;
    const entries = Object.entries(value);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, v] = entries[i]!;
      if (k === 'PLpgSQL_expr' && isNode(v)) {
        const piece = pieceOf(v.query, v.parseMode, key === 'dynquery' || (key === 'query' && DYNAMIC_QUERY.has(statement)));
        if (piece !== null) pieces.push(piece);
      } else {
        stack.push({ value: v, key: k, statement: k.startsWith('PLpgSQL_stmt_') ? k : statement });
      }
    }
  }
  return pieces;
}

function pieceOf(query: unknown, parseMode: unknown, dynamic: boolean): Piece | null {
  if (typeof query !== 'string') return null;
  const mode = typeof parseMode === 'number' ? parseMode : RAW_PARSE_DEFAULT;
  if (dynamic) return { kind: 'dynamic', expression: query };
  if (mode === RAW_PARSE_DEFAULT) return { kind: 'sql', text: query };
  if (mode === RAW_PARSE_TYPE_NAME) return null;
  if (mode >= RAW_PARSE_PLPGSQL_ASSIGN1 && mode <= RAW_PARSE_PLPGSQL_ASSIGN3) {
    // `target := expression` (or `=`): the expression is what runs.
    const at = query.indexOf(':=');
    const eq = at >= 0 ? at + 2 : query.indexOf('=') + 1;
    return { kind: 'sql', text: `SELECT ${eq > 0 ? query.slice(eq) : query}` };
  }
  return { kind: 'sql', text: `SELECT ${query}` };
}
