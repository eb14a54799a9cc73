/**
 * PURE: reads the facts of each statement (facts.ts) straight from libpg-query's JSON text,
 * in one pass, building objects only for the few subtrees a rule looks into (a DELETE's
 * WHERE, a DROP's objects, a SELECT's LIMIT, a body's options). Building the whole tree with
 * JSON.parse and walking it cost about twice the parse itself. The reader keeps its own
 * stack, so a deep tree cannot overflow the call stack, and it can stop after a budget of
 * characters and go on later (parser.ts reads the tree of a long text in slices).
 *
 * Table names are resolved by scope as PostgreSQL does: a CTE's name hides a table only in
 * FROM-position references (FROM, JOIN, USING, MERGE's source) inside the query whose WITH
 * defines it (its main body, the CTEs written after it, and with RECURSIVE every CTE), and
 * only when written unqualified with the same spelling. A DML target, a COPY or TRUNCATE
 * table, a schema-qualified name always name a table. CTE scopes close before the query
 * that holds them, so refs are resolved when the defining node closes.
 */
import { isAlwaysTrue, unfilteredMerge, type MergeAction } from './where.js';
import { bodyOf, DROPPED_TABLES, droppedTables, FILE_FUNCTIONS, SQL_TEXT_FUNCTIONS, kindOf, limitOf, mergeKindOf, type Body, type Limit, type ReadStatement, type TableRef } from './facts.js';
import type { Node } from './nodes.js';
import { FROM_LISTS, isStatementType, keeps, newFrame, type Frame } from './frames.js';
import { resolveCtes, type Ref } from './scopes.js';

/** What one statement has shown so far. */
interface Statement {
  kinds: (string | null)[];
  refs: Ref[];
  unfiltered: ('delete' | 'update')[];
  limit: Limit | null;
  bodies: Body[];
  setsSearchPath: boolean;
  /** Why the statement cannot be trusted to mean what it reads as (it changes how strings are read); null when it can. */
  unreadable: string | null;
  /** The WHEN clauses of the MERGEs being read, until their MergeStmt closes. */
  mergeActions: MergeAction[];
  location: number;
  length: number;
}

/** Statements whose `query` returns its rows to the client: EXPLAIN (ANALYZE runs it), a cursor, a prepared statement, COPY (query) TO. */
const QUERY_HOLDERS = new Set(['ExplainStmt', 'DeclareCursorStmt', 'PrepareStmt', 'CopyStmt']);

/** Settings that change what a string literal's backslash means. */
const STRING_SETTINGS = new Set(['standard_conforming_strings', 'backslash_quote']);

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/**
 * Reads the facts of each statement from libpg-query's JSON (`{"version":..,"stmts":[{"stmt":
 * {"SelectStmt":{..}}, "stmt_location": ..}, ..]}`). Depths: 0 the root, 1 `stmts`, 2 a
 * statement's entry, 3 its `stmt`, 4 the statement's node.
 */
export class TreeReader {
  readonly #json: string;
  #at = 0;
  readonly #frames: Frame[] = [];
  #depth = -1;
  /** The key just read, whose value comes next. */
  #key = '';
  #statement: Statement | null = null;
  readonly #statements: ReadStatement[] = [];

  constructor(json: string) {
    this.#json = json;
  }

  /** Reads about `budget` characters more (to the end by default); true once the whole text is read. */
  read(budget = Infinity): boolean {
    const s = this.#json;
    const end = Math.min(s.length, this.#at + budget);
    let i = this.#at;
    while (i < end) {
      const c = s.charCodeAt(i);
      if (c === QUOTE) i = this.#string(i);
      else if (c === COMMA || c === COLON || c <= 0x20) i++;
      else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        this.#open(c === OPEN_ARRAY);
        i++;
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        this.#close();
        i++;
      } else i = this.#literal(i);
    }
    this.#at = i;
    if (i < s.length) return false;
    if (this.#depth !== -1) throw new Error('the parse tree text ends early');
    return true;
  }

  /** The facts of each statement, once read() has returned true. */
  statements(): ReadStatement[] {
    return this.#statements;
  }

  /** A string at `i`: the key of what follows, or a value. Returns the index after it. */
  #string(i: number): number {
    const s = this.#json;
    let close = s.indexOf('"', i + 1);
    let escaped = false;
    // A quote preceded by an odd number of backslashes is escaped.
    for (;;) {
      if (close < 0) throw new Error('the parse tree text ends inside a string');
      let slashes = 0;
      while (s.charCodeAt(close - 1 - slashes) === BACKSLASH) slashes++;
      if (slashes > 0) escaped = true;
      if (slashes % 2 === 0) break;
      close = s.indexOf('"', close + 1);
    }
    const frame = this.#frames[this.#depth]!;
    if (frame.array) {
      if (frame.building) (frame.value as unknown[]).push(this.#text(i, close, escaped));
      return close + 1;
    }
    // In an object, a string before a colon is a key.
    let next = close + 1;
    while (s.charCodeAt(next) <= 0x20) next++;
    if (s.charCodeAt(next) === COLON) {
      const key = s.slice(i + 1, close);
      this.#key = key;
      if (key === 'intoClause') frame.hasInto = true;
      else if (key === 'whereClause') frame.hasWhere = true;
      else if (key === 'limitCount') frame.hasLimit = true;
      return next + 1;
    }
    const key = this.#key;
    switch (key) {
      case 'relname':
        frame.relname = this.#text(i, close, escaped);
        break;
      case 'schemaname':
        frame.schemaname = this.#text(i, close, escaped);
        break;
      case 'ctename':
        frame.ctename = this.#text(i, close, escaped);
        break;
      case 'removeType':
        frame.removeType = this.#text(i, close, escaped);
        break;
      case 'commandType':
        frame.commandType = this.#text(i, close, escaped);
        break;
      case 'aliasname':
        if (frame.key === 'alias' && this.#depth >= 2 && this.#frames[this.#depth - 1]!.key === 'relation') this.#frames[this.#depth - 2]!.alias = this.#text(i, close, escaped);
        break;
      case 'limitOption':
        if (this.#text(i, close, escaped) === 'LIMIT_OPTION_WITH_TIES') frame.withTies = true;
        break;
      case 'matchKind':
        frame.matchKind = this.#text(i, close, escaped);
        break;
      case 'filename':
        // COPY to or from a file on the server (STDIN/STDOUT give none).
        if (frame.key === 'CopyStmt') frame.hasFile = true;
        break;
      case 'defname':
        // file_fdw's options (CREATE / ALTER FOREIGN TABLE): `program` runs a shell command, `filename` reads a server file.
        if (this.#statement !== null && frame.key === 'DefElem') {
          const option = this.#text(i, close, escaped);
          if (option === 'program') this.#statement.kinds.push('copy_program');
          else if (option === 'filename') this.#statement.kinds.push('file_access');
        }
        break;
      case 'name':
      case 'sval':
        if (this.#statement !== null) this.#nameOrString(this.#text(i, close, escaped), this.#statement);
        break;
    }
    if (frame.building) (frame.value as Node)[key] = this.#text(i, close, escaped);
    return close + 1;
  }

  /** A `name` or `sval`: a search_path being set, or a function that touches files being called. */
  #nameOrString(value: string, statement: Statement): void {
    // SET search_path, set_config('search_path', ...), ALTER ROLE ... SET search_path.
    if (value.length === 11 && value.toLowerCase() === 'search_path') statement.setsSearchPath = true;
    // How later texts' string literals are read (literals.ts): set here, it would hold for requests the guard reads otherwise.
    else if (STRING_SETTINGS.has(value.toLowerCase())) statement.unreadable ??= `it sets ${value.toLowerCase()}, which changes how string literals are read`;
    // {"FuncCall":{"funcname":[{"String":{"sval":"pg_read_file"}}]}}: the name as written (a quoted name keeps its case).
    const d = this.#depth;
    if (d >= 3 && this.#frames[d - 2]!.key === 'funcname' && this.#frames[d - 3]!.key === 'FuncCall') {
      if (FILE_FUNCTIONS.has(value)) statement.kinds.push('file_access');
      const lower = value.toLowerCase();
      // Matched in any case: failing closed on a same-named function of another spelling costs little.
      if (SQL_TEXT_FUNCTIONS.has(lower)) statement.unreadable ??= `${lower}() runs SQL given as text or reads tables by name, which cannot be read`;
      if (lower === 'set_config') statement.setsSearchPath = true;
    }
  }

  /** The string value between the quotes at `open` and `close`; `escaped` when it holds a backslash. */
  #text(open: number, close: number, escaped: boolean): string {
    // Only the string's own characters are looked at: searching the rest of the text for a
    // backslash made reading a tree quadratic in its length.
    const s = this.#json;
    if (!escaped) {
      let i = open + 1;
      while (i < close && s.charCodeAt(i) !== BACKSLASH) i++;
      if (i === close) return s.slice(open + 1, close);
    }
    return JSON.parse(s.slice(open, close + 1)) as string;
  }

  /** A number, true, false or null at `i`. Returns the index after it. */
  #literal(i: number): number {
    const s = this.#json;
    let end = i + 1;
    for (;;) {
      const c = s.charCodeAt(end);
      if (Number.isNaN(c) || c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY || c <= 0x20) break;
      end++;
    }
    const depth = this.#depth;
    const frame = this.#frames[depth];
    if (frame === undefined) throw new Error('the parse tree text is not an object');
    // Most literals are locations, read by no rule: only a few flags and built subtrees need the value.
    if (frame.building) {
      const raw = s.slice(i, end);
      const value = raw === 'true' ? true : raw === 'false' ? false : raw === 'null' ? null : Number(raw);
      if (frame.array) (frame.value as unknown[]).push(value);
      else (frame.value as Node)[this.#key] = value;
    }
    if (!frame.array) {
      const key = this.#key;
      if (s.startsWith('true', i)) {
        if (key === 'is_grant') frame.isGrant = true;
        else if (key === 'is_program') frame.isProgram = true;
        else if (key === 'is_from') frame.isFrom = true;
        else if (key === 'recursive' && frame.key === 'withClause' && depth > 0) this.#frames[depth - 1]!.recursive = true;
      } else if (depth === 2 && this.#statement !== null) {
        if (key === 'stmt_location') this.#statement.location = Number(s.slice(i, end));
        else if (key === 'stmt_len') this.#statement.length = Number(s.slice(i, end));
      }
    }
    return end;
  }

  #open(array: boolean): void {
    const parent = this.#depth >= 0 ? this.#frames[this.#depth]! : undefined;
    const key = parent !== undefined && !parent.array ? this.#key : '';
    const depth = ++this.#depth;
    let frame = this.#frames[depth];
    if (frame === undefined) {
      frame = newFrame();
      this.#frames.push(frame);
    } else {
      frame.relname = frame.schemaname = frame.ctename = frame.commandType = frame.matchKind = frame.alias = frame.removeType = frame.kept = undefined;
      frame.kindSlot = -1;
      frame.hasInto = frame.isGrant = frame.isProgram = frame.hasFile = frame.isFrom = frame.hasWhere = frame.hasLimit = frame.withTies = frame.recursive = false;
      frame.ctes = null;
    }
    frame.key = key;
    frame.array = array;
    frame.building = parent !== undefined && (parent.building || keeps(parent.key, key));
    frame.value = frame.building ? (array ? [] : {}) : null;
    if (array) return;
    if (depth === 2 && parent!.key === 'stmts') {
      this.#statement = { kinds: [], refs: [], unfiltered: [], limit: null, bodies: [], setsSearchPath: false, unreadable: null, mergeActions: [], location: 0, length: 0 };
    }
    const statement = this.#statement;
    frame.refsStart = statement?.refs.length ?? 0;
    if (statement !== null && isStatementType(key)) {
      frame.kindSlot = statement.kinds.length;
      statement.kinds.push(null);
    }
  }

  #close(): void {
    const depth = this.#depth--;
    const frame = this.#frames[depth];
    if (frame === undefined) throw new Error('the parse tree text closes more than it opens');
    const parent = depth > 0 ? this.#frames[depth - 1]! : undefined;
    const statement = this.#statement;
    if (!frame.array && statement !== null) {
      if (frame.relname !== undefined) this.#addRef(frame, depth, statement);
      if (frame.kindSlot >= 0) this.#closeStatementNode(frame, depth, statement);
      if (frame.key === 'CommonTableExpr' && frame.ctename !== undefined && depth >= 4 && this.#frames[depth - 3]!.key === 'withClause') {
        (this.#frames[depth - 4]!.ctes ??= []).push({ name: frame.ctename, start: frame.refsStart, end: statement.refs.length });
      } else if (frame.key === 'MergeWhenClause') {
        statement.kinds.push(mergeKindOf(frame.commandType));
        statement.mergeActions.push({ kind: mergeKindOf(frame.commandType), matchKind: frame.matchKind, condition: frame.kept });
      }
      if (frame.ctes !== null) resolveCtes(statement.refs, frame.refsStart, frame.ctes, frame.recursive);
      if (depth === 2) {
        this.#statements.push(Object.freeze(readStatementOf(statement)));
        this.#statement = null;
      }
    }
    if (parent === undefined) return;
    if (parent.building) {
      if (parent.array) (parent.value as unknown[]).push(frame.value);
      else (parent.value as Node)[frame.key] = frame.value;
    } else if (frame.building) {
      parent.kept = frame.value;
    }
  }

  /** A RangeVar: free when unqualified and written where a FROM item is (a CTE of its name would stand for it). */
  #addRef(frame: Frame, depth: number, statement: Statement): void {
    let free = false;
    if (frame.schemaname === undefined && frame.key === 'RangeVar' && depth >= 2) {
      const up = this.#frames[depth - 1]!;
      const upper = this.#frames[depth - 2]!;
      free =
        up.key === 'sourceRelation' ||
        ((up.key === 'larg' || up.key === 'rarg') && upper.key === 'JoinExpr') ||
        (up.key === '' && upper.array && FROM_LISTS.has(upper.key));
    }
    // The name as written decides which CTE it is; the table rules compare names case-insensitively.
    statement.refs.push({ schema: frame.schemaname ?? null, name: frame.relname!, free, cte: false });
  }

  #closeStatementNode(frame: Frame, depth: number, statement: Statement): void {
    const type = frame.key;
    statement.kinds[frame.kindSlot] = kindOf(type, frame.hasInto, frame.isGrant);
    switch (type) {
      case 'DeleteStmt':
      case 'UpdateStmt':
        if (!frame.hasWhere || isAlwaysTrue(frame.kept, this.#targetOf(frame, statement))) statement.unfiltered.push(type === 'DeleteStmt' ? 'delete' : 'update');
        break;
      case 'MergeStmt':
        // A MERGE's WHEN clauses close before it: they are the last ones pushed, a MERGE nested in its source's before them.
        for (const op of unfilteredMerge(frame.kept, statement.mergeActions, this.#targetOf(frame, statement))) statement.unfiltered.push(op);
        statement.mergeActions.length = 0;
        break;
      case 'DropStmt':
        if (frame.removeType !== undefined && DROPPED_TABLES.has(frame.removeType)) {
          for (const t of droppedTables(frame.kept)) statement.refs.push({ ...t, free: false, cte: false });
        }
        break;
      case 'SelectStmt':
        if (this.#isTopLevel(depth)) statement.limit = frame.hasInto ? null : frame.withTies ? 'none' : limitOf(frame.hasLimit, frame.kept);
        break;
      case 'FetchStmt':
      case 'ExecuteStmt':
        // Rows of a cursor or prepared statement declared elsewhere: their bound cannot be seen.
        if (depth === 4) statement.limit = 'none';
        break;
      case 'CopyStmt':
        if (frame.isProgram) statement.kinds.push('copy_program');
        else if (frame.hasFile) statement.kinds.push('file_access');
        // COPY table TO: every row (COPY (query) TO has its query's limit already).
        if (depth === 4 && !frame.isFrom && statement.limit === null) statement.limit = 'none';
        break;
      case 'CreateFunctionStmt':
      case 'DoStmt': {
        if (type === 'CreateFunctionStmt') statement.kinds.push('create_function');
        const body = bodyOf(type, frame.kept);
        if (body !== null) statement.bodies.push(body);
        break;
      }
    }
  }

  /** The names a DML statement's target goes by in its conditions: the table's (its relation is its first ref) and its alias. */
  #targetOf(frame: Frame, statement: Statement): ReadonlySet<string> {
    const names = new Set<string>();
    const relation = statement.refs[frame.refsStart];
    if (relation !== undefined) names.add(relation.name);
    if (frame.alias !== undefined) names.add(frame.alias);
    return names;
  }

  /** A statement node that is the statement itself, or the query of a QUERY_HOLDERS statement. */
  #isTopLevel(depth: number): boolean {
    const f = this.#frames;
    if (depth === 4) return f[3]!.key === 'stmt';
    return depth === 6 && f[5]!.key === 'query' && QUERY_HOLDERS.has(f[4]!.key) && f[3]!.key === 'stmt';
  }
}

function readStatementOf(s: Statement): ReadStatement {
  const kinds: string[] = [];
  for (const kind of s.kinds) if (kind !== null && !kinds.includes(kind)) kinds.push(kind);
  const tables: TableRef[] = [];
  for (const ref of s.refs) if (!ref.cte) tables.push({ schema: ref.schema?.toLowerCase() ?? null, name: ref.name.toLowerCase() });
  return {
    kinds,
    tables,
    unfiltered: s.unfiltered,
    limit: s.limit,
    unreadable: s.unreadable,
    setsSearchPath: s.setsSearchPath,
    bodies: s.bodies,
    location: s.location,
    length: s.length,
  };
}

/** The facts of each statement of libpg-query's JSON text, bodies not yet read. */
export function readTree(json: string): ReadStatement[] {
  const reader = new TreeReader(json);
  reader.read();
  return reader.statements();
}
