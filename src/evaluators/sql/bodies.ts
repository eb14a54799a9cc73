/**
 * PURE: the facts of a SQL text with its bodies read. A DO block, a function or procedure
 * body is code PostgreSQL runs later, written as a string the main parse leaves unread:
 * `DO $$ BEGIN DROP TABLE users; END $$` drops a table. Each body is parsed (SQL bodies with
 * the SQL parser, PL/pgSQL with libpg-query's PL/pgSQL parser, whose embedded statements and
 * expressions are then parsed as SQL, an EXECUTE of a constant string included) and its
 * kinds, tables and unfiltered writes count as the statement's own. A body that cannot be
 * read (another language, an EXECUTE of a computed string, nesting past MAX_NESTING, a body
 * that does not parse) makes the statement `unreadable`, which on_parse_error decides.
 *
 * Written as generators that yield each parse they need: parser.ts answers them on the
 * event loop (short texts) or on parse threads (long ones), with the same results.
 */
import type { ParserAnswer } from './call-parser.js';
import type { ReadStatement, StatementFacts, TableRef } from './facts.js';
import { hasAmbiguousLiteral } from './literals.js';
import { isNode } from './nodes.js';
import { piecesOfPlpgsql } from './plpgsql.js';
import { readTree } from './tree-reader.js';

/** A parse a generator needs: SQL, or the PL/pgSQL bodies of one DO / CREATE FUNCTION statement. */
export interface ParseRequest {
  text: string;
  plpgsql: boolean;
}

export type Parsed = { ok: true; statements: readonly StatementFacts[] } | { ok: false; error: string };

export type Reading<T> = Generator<ParseRequest, T, ParserAnswer>;

/** Bodies inside bodies (an EXECUTE in a DO in a function) read at most this deep. */
export const MAX_NESTING = 8;

/** Parses one text may ask for at most (its own, its bodies', their pieces'). */
export const MAX_PARSES = 1000;

const NO_STATEMENTS: Parsed = Object.freeze({ ok: true, statements: Object.freeze([]) });
/** The parser reads a C string, which would end at a NUL and leave what follows unread (`SELECT 1\0; DROP TABLE x`). */
const NUL_IN_TEXT: Parsed = Object.freeze({ ok: false, error: 'a NUL character in the text' });
/** literals.ts: a plain literal with a backslash means another text to a server with standard_conforming_strings off. */
const AMBIGUOUS_LITERAL: Parsed = Object.freeze({
  ok: false,
  error: 'a plain string literal holds a backslash, which a server with standard_conforming_strings off reads as an escape (write it as E\'...\' or $$...$$)',
});

/** What a text parses to before the parser is called: nothing for blank text, a failure for a NUL; undefined otherwise. */
export function answerBeforeParsing(text: string): Parsed | undefined {
  // The parser refuses empty input; blank text holds no statement.
  if (text.trim() === '') return NO_STATEMENTS;
  if (text.includes('\0')) return NUL_IN_TEXT;
  if (hasAmbiguousLiteral(text)) return AMBIGUOUS_LITERAL;
  return undefined;
}

/** The parser's error without the guarded text it quotes (`syntax error at or near "DROPP"`). */
export function errorOf(answer: Exclude<ParserAnswer, { tree: string }>): string {
  const what = answer.message
    .replace(/\s+at or near\s+".*$/s, '')
    .replace(/\s+at end of input$/, ' at the end')
    .replace(/"[^"]*"/g, '"…"');
  return `${what}${answer.cursor > 0 ? ` at character ${answer.cursor}` : ''}`;
}

/** Counts the parses of one text. */
export interface Budget {
  parses: number;
}

/** The facts of `text`, bodies read. */
export function* readText(text: string, depth: number, budget: Budget): Reading<Parsed> {
  const early = answerBeforeParsing(text);
  if (early !== undefined) return early;
  if (++budget.parses > MAX_PARSES) return { ok: false, error: `more than ${MAX_PARSES} bodies and statements in bodies` };
  const answer = yield { text, plpgsql: false };
  if (!('tree' in answer)) return { ok: false, error: errorOf(answer) };
  return { ok: true, statements: yield* readBodies(text, readTree(answer.tree), depth, budget) };
}

/** What one statement holds, its bodies' facts added as they are read. */
interface Facts {
  kinds: string[];
  tables: TableRef[];
  unfiltered: ('delete' | 'update')[];
  unreadable: string | null;
  setsSearchPath: boolean;
}

/** The statements of `text` (read from its tree) with their bodies read. */
export function* readBodies(text: string, statements: readonly ReadStatement[], depth: number, budget: Budget): Reading<StatementFacts[]> {
  const out: StatementFacts[] = [];
  let bytes: Buffer | undefined;
  for (const s of statements) {
    if (s.bodies.length === 0) {
      out.push(Object.freeze(factsOf(s, s)));
      continue;
    }
    const facts: Facts = { kinds: [...s.kinds], tables: [...s.tables], unfiltered: [...s.unfiltered], unreadable: s.unreadable, setsSearchPath: s.setsSearchPath };
    for (const body of s.bodies) {
      if (depth >= MAX_NESTING) {
        facts.unreadable ??= `a ${body.what} nested more than ${MAX_NESTING} deep cannot be read`;
        continue;
      }
      if (body.source === null) {
        facts.unreadable ??= `a ${body.what} that is not one string cannot be read`;
      } else if (body.language === 'sql') {
        yield* addText(facts, body.source, depth, budget, `the ${body.what}`);
      } else if (body.language === 'plpgsql') {
        bytes ??= Buffer.from(text, 'utf8');
        const statement = bytes.subarray(s.location, s.length > 0 ? s.location + s.length : bytes.length).toString('utf8');
        yield* addPlpgsql(facts, statement, body.what, depth, budget);
      } else {
        facts.unreadable ??= `a ${body.what} in language ${body.language ?? '(none)'} cannot be read`;
      }
    }
    out.push(Object.freeze(factsOf(s, facts)));
  }
  return out;
}

function factsOf(s: ReadStatement, facts: Omit<StatementFacts, 'limit'>): StatementFacts {
  return {
    kinds: [...new Set(facts.kinds)],
    tables: facts.tables,
    unfiltered: facts.unfiltered,
    limit: s.limit,
    unreadable: facts.unreadable,
    setsSearchPath: facts.setsSearchPath,
  };
}

/** Reads `text` (SQL) and adds its facts to `facts`; `what` names it in the reason it cannot be read. */
function* addText(facts: Facts, text: string, depth: number, budget: Budget, what: string): Reading<void> {
  const parsed = yield* readText(text, depth + 1, budget);
  if (!parsed.ok) {
    facts.unreadable ??= `${what} cannot be read: it does not parse as SQL: ${parsed.error}`;
    return;
  }
  for (const s of parsed.statements) {
    facts.kinds.push(...s.kinds);
    facts.tables.push(...s.tables);
    facts.unfiltered.push(...s.unfiltered);
    facts.unreadable ??= s.unreadable;
    facts.setsSearchPath ||= s.setsSearchPath;
  }
}

function* addPlpgsql(facts: Facts, statement: string, what: string, depth: number, budget: Budget): Reading<void> {
  if (++budget.parses > MAX_PARSES) {
    facts.unreadable ??= `more than ${MAX_PARSES} bodies and statements in bodies`;
    return;
  }
  const answer = yield { text: statement, plpgsql: true };
  if (!('tree' in answer)) {
    facts.unreadable ??= `the ${what} cannot be read: it does not parse as PL/pgSQL: ${errorOf(answer)}`;
    return;
  }
  for (const piece of piecesOfPlpgsql(answer.tree)) {
    if (piece.kind === 'sql') {
      yield* addText(facts, piece.text, depth, budget, `a statement of the ${what}`);
      continue;
    }
    const query = yield* constantStringOf(piece.expression, budget);
    if (query === undefined) facts.unreadable ??= `a dynamic EXECUTE in the ${what} cannot be read: its query is not a constant string`;
    else yield* addText(facts, query, depth, budget, `an EXECUTE in the ${what}`);
  }
}

/** The string an EXECUTE's expression always is (`'DROP ' || 'TABLE x'`, `E'\x44ROP'`), or undefined. */
function* constantStringOf(expression: string, budget: Budget): Reading<string | undefined> {
  if (++budget.parses > MAX_PARSES) return undefined;
  const answer = yield { text: `SELECT ${expression}`, plpgsql: false };
  if (!('tree' in answer)) return undefined;
  const tree = JSON.parse(answer.tree) as unknown;
  const stmts = isNode(tree) && Array.isArray(tree.stmts) ? tree.stmts : [];
  const select = stmts.length === 1 && isNode(stmts[0]) && isNode(stmts[0].stmt) ? stmts[0].stmt.SelectStmt : undefined;
  if (!isNode(select) || !Array.isArray(select.targetList) || select.targetList.length !== 1 || Object.keys(select).some((key) => !PLAIN_SELECT.has(key))) return undefined;
  const target: unknown = select.targetList[0];
  return isNode(target) && isNode(target.ResTarget) ? stringOf(target.ResTarget.val, 0) : undefined;
}

/** The fields of `SELECT expression` and nothing more (no FROM, WHERE, LIMIT ...). */
const PLAIN_SELECT = new Set(['targetList', 'limitOption', 'op']);

function stringOf(node: unknown, depth: number): string | undefined {
  if (depth > 200 || !isNode(node)) return undefined;
  if (isNode(node.A_Const)) {
    const value = node.A_Const.sval;
    return isNode(value) ? (typeof value.sval === 'string' ? value.sval : '') : undefined;
  }
  if (isNode(node.TypeCast)) return keepsWholeString(node.TypeCast.typeName) ? stringOf(node.TypeCast.arg, depth + 1) : undefined;
  const expr = node.A_Expr;
  if (isNode(expr) && expr.kind === 'AEXPR_OP' && Array.isArray(expr.name) && expr.name.length === 1) {
    const op: unknown = expr.name[0];
    if (!isNode(op) || !isNode(op.String) || op.String.sval !== '||') return undefined;
    const left = stringOf(expr.lexpr, depth + 1);
    const right = left === undefined ? undefined : stringOf(expr.rexpr, depth + 1);
    return left !== undefined && right !== undefined ? left + right : undefined;
  }
  return undefined;
}

/**
 * Types a string keeps whole when cast to: text and varchar without a length. A length
 * (`::varchar(13)`, `char(n)`), bpchar or `name` (63 bytes) cuts the string, and
 * `'DELETE FROM t WHERE id = 1'::varchar(13)` runs `DELETE FROM t`: such a cast is not read.
 */
function keepsWholeString(typeName: unknown): boolean {
  if (!isNode(typeName) || !Array.isArray(typeName.names)) return false;
  if (typeName.typmods !== undefined || typeName.arrayBounds !== undefined) return false;
  // Only pg_catalog's types: `evil.text` may be a domain with a length.
  const names = typeName.names.map((n) => (isNode(n) && isNode(n.String) ? n.String.sval : undefined));
  if (names.length > 2 || (names.length === 2 && names[0] !== 'pg_catalog')) return false;
  return names.at(-1) === 'text' || names.at(-1) === 'varchar';
}
