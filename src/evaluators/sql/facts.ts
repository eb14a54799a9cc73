/**
 * PURE: what the sql evaluator's rules need from a PostgreSQL parse tree, one statement at a
 * time: the kinds of statement it holds (nested ones included: a DELETE inside a CTE
 * deletes), the tables it names (joins, subqueries, CTEs, DROP and TRUNCATE targets), the
 * DELETEs and UPDATEs without WHERE, and a SELECT's LIMIT.
 *
 * The tree arrives as libpg-query's JSON text, and TreeReader reads the facts straight from
 * that text in one pass, building objects only for the few subtrees a rule looks into (a
 * DELETE's WHERE, a DROP's objects, a SELECT's LIMIT). Building the whole tree with
 * JSON.parse and walking it cost about twice the parse itself: a 120-character query gives
 * 1.4 KB of JSON. The reader keeps its own stack, so a deep tree cannot overflow the call
 * stack, and it can stop after a budget of characters and go on later (parser.ts reads the
 * tree of a long text in slices, between which the event loop runs).
 */
import { isNode, type Node } from './nodes.js';
import { isAlwaysTrue } from './where.js';

export const OPERATIONS = ['select', 'insert', 'update', 'delete', 'drop', 'truncate', 'alter', 'create', 'grant', 'revoke', 'merge'] as const;
export type Operation = (typeof OPERATIONS)[number];

export interface TableRef {
  /** Lowercased; null when the statement does not qualify the table. */
  readonly schema: string | null;
  readonly name: string;
}

/** A SELECT's row limit: a number, none (no LIMIT, or LIMIT ALL), or not a constant. */
export type Limit = number | 'none' | 'unknown';

export interface StatementFacts {
  /** The statement's own kind first, then nested kinds in the order written; other statements as their node name (`copy`, `do`). */
  readonly kinds: readonly string[];
  /** In the order written. */
  readonly tables: readonly TableRef[];
  /** `delete` / `update` for each such statement without WHERE (or with an always-true one, where.ts), nested ones included. */
  readonly unfiltered: readonly ('delete' | 'update')[];
  /** The limit of a top-level SELECT; null for other statements. */
  readonly limit: Limit | null;
}

/** The kind of a statement node type (`DeleteStmt` -> delete), or null for a node that is not a statement. */
export function kindOf(type: string, hasInto: boolean, isGrant: boolean): string | null {
  if (!type.endsWith('Stmt')) return null;
  switch (type) {
    case 'SelectStmt':
      // SELECT ... INTO makes a table.
      return hasInto ? 'create' : 'select';
    case 'InsertStmt':
      return 'insert';
    case 'UpdateStmt':
      return 'update';
    case 'DeleteStmt':
      return 'delete';
    case 'MergeStmt':
      return 'merge';
    case 'TruncateStmt':
      return 'truncate';
    case 'GrantStmt':
    case 'GrantRoleStmt':
      return isGrant ? 'grant' : 'revoke';
    case 'RenameStmt':
      return 'alter';
    case 'IndexStmt':
    case 'ViewStmt':
    case 'DefineStmt':
    case 'RuleStmt':
    case 'CompositeTypeStmt':
      return 'create';
    case 'ExplainStmt':
      // EXPLAIN ANALYZE runs its statement: it counts as what it explains (found below it).
      return null;
  }
  if (type.startsWith('Drop')) return 'drop';
  if (type.startsWith('Alter')) return 'alter';
  if (type.startsWith('Create')) return 'create';
  return type.slice(0, -'Stmt'.length).toLowerCase();
}

/** DROP targets that are tables (or read like them). */
const DROPPED_TABLES = new Set(['OBJECT_TABLE', 'OBJECT_VIEW', 'OBJECT_MATVIEW', 'OBJECT_FOREIGN_TABLE', 'OBJECT_SEQUENCE', 'OBJECT_INDEX']);

/** One object or array of the JSON text being read; the reader keeps one per depth and reuses it. */
interface Frame {
  /** Its key in the parent object; '' for an array item and the root. */
  key: string;
  array: boolean;
  /** Inside a subtree a rule looks into: its value is built. */
  building: boolean;
  value: Node | unknown[] | null;
  relname: string | undefined;
  schemaname: string | undefined;
  ctename: string | undefined;
  /** For a statement node (its key ends in Stmt): its place in the statement's kinds; else -1. */
  kindSlot: number;
  hasInto: boolean;
  isGrant: boolean;
  hasWhere: boolean;
  hasLimit: boolean;
  removeType: string | undefined;
  /** The built subtree a rule looks into: a DELETE/UPDATE's whereClause, a DROP's objects, a SELECT's limitCount. */
  kept: unknown;
}

const newFrame = (): Frame => ({
  key: '',
  array: false,
  building: false,
  value: null,
  relname: undefined,
  schemaname: undefined,
  ctename: undefined,
  kindSlot: -1,
  hasInto: false,
  isGrant: false,
  hasWhere: false,
  hasLimit: false,
  removeType: undefined,
  kept: undefined,
});

/** `SelectStmt`, `DropStmt`: a key ending in Stmt (charCodeAt: endsWith is a call the JIT does not inline, on every object of the tree). */
function isStatementType(key: string): boolean {
  const n = key.length;
  return n > 4 && key.charCodeAt(n - 1) === 0x74 && key.charCodeAt(n - 2) === 0x6d && key.charCodeAt(n - 3) === 0x74 && key.charCodeAt(n - 4) === 0x53;
}

/** The subtree under `key` of a node of type `type` that a rule looks into. */
function keeps(type: string, key: string): boolean {
  switch (key) {
    case 'whereClause':
      return type === 'DeleteStmt' || type === 'UpdateStmt';
    case 'objects':
      return type === 'DropStmt';
    case 'limitCount':
      return type === 'SelectStmt';
  }
  return false;
}

/** What one statement has shown so far. */
interface Statement {
  kinds: (string | null)[];
  tables: TableRef[];
  unfiltered: ('delete' | 'update')[];
  ctes: Set<string> | null;
  limit: Limit | null;
}

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
 * {"SelectStmt":{..}}}, ..]}`). Depths: 0 the root, 1 `stmts`, 2 a statement's entry, 3 its
 * `stmt`, 4 the statement's node.
 */
export class TreeReader {
  readonly #json: string;
  #at = 0;
  readonly #frames: Frame[] = [];
  #depth = -1;
  /** The key just read, whose value comes next. */
  #key = '';
  #statement: Statement | null = null;
  readonly #statements: StatementFacts[] = [];

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
  statements(): StatementFacts[] {
    return this.#statements;
  }

  /** A string at `i`: the key of what follows, or a value. Returns the index after it. */
  #string(i: number): number {
    const s = this.#json;
    let close = s.indexOf('"', i + 1);
    // A quote preceded by an odd number of backslashes is escaped.
    for (;;) {
      if (close < 0) throw new Error('the parse tree text ends inside a string');
      let slashes = 0;
      while (s.charCodeAt(close - 1 - slashes) === BACKSLASH) slashes++;
      if (slashes % 2 === 0) break;
      close = s.indexOf('"', close + 1);
    }
    const frame = this.#frames[this.#depth]!;
    if (frame.array) {
      if (frame.building) (frame.value as unknown[]).push(this.#text(i, close));
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
        frame.relname = this.#text(i, close);
        break;
      case 'schemaname':
        frame.schemaname = this.#text(i, close);
        break;
      case 'ctename':
        frame.ctename = this.#text(i, close);
        break;
      case 'removeType':
        frame.removeType = this.#text(i, close);
        break;
    }
    if (frame.building) (frame.value as Node)[key] = this.#text(i, close);
    return close + 1;
  }

  /** The string value between the quotes at `open` and `close`. */
  #text(open: number, close: number): string {
    const s = this.#json;
    const slash = s.indexOf('\\', open + 1);
    return slash < 0 || slash > close ? s.slice(open + 1, close) : (JSON.parse(s.slice(open, close + 1)) as string);
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
    const frame = this.#frames[this.#depth];
    if (frame === undefined) throw new Error('the parse tree text is not an object');
    // Most literals are locations, read by no rule: only is_grant and built subtrees need the value.
    if (frame.building) {
      const raw = s.slice(i, end);
      const value = raw === 'true' ? true : raw === 'false' ? false : raw === 'null' ? null : Number(raw);
      if (frame.array) (frame.value as unknown[]).push(value);
      else (frame.value as Node)[this.#key] = value;
    }
    if (!frame.array && this.#key === 'is_grant' && s.startsWith('true', i)) frame.isGrant = true;
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
      frame.relname = frame.schemaname = frame.ctename = frame.removeType = frame.kept = undefined;
      frame.kindSlot = -1;
      frame.hasInto = frame.isGrant = frame.hasWhere = frame.hasLimit = false;
    }
    frame.key = key;
    frame.array = array;
    frame.building = parent !== undefined && (parent.building || keeps(parent.key, key));
    frame.value = frame.building ? (array ? [] : {}) : null;
    if (array) return;
    if (depth === 2 && parent!.key === 'stmts') {
      this.#statement = { kinds: [], tables: [], unfiltered: [], ctes: null, limit: null };
    }
    const statement = this.#statement;
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
      if (frame.relname !== undefined) {
        statement.tables.push({ schema: frame.schemaname?.toLowerCase() ?? null, name: frame.relname.toLowerCase() });
      }
      if (frame.ctename !== undefined) (statement.ctes ??= new Set()).add(frame.ctename.toLowerCase());
      if (frame.kindSlot >= 0) this.#closeStatementNode(frame, depth, statement);
      if (depth === 2) {
        this.#statements.push(Object.freeze(factsOf(statement)));
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

  #closeStatementNode(frame: Frame, depth: number, statement: Statement): void {
    const type = frame.key;
    statement.kinds[frame.kindSlot] = kindOf(type, frame.hasInto, frame.isGrant);
    if (type === 'DeleteStmt' || type === 'UpdateStmt') {
      if (!frame.hasWhere || isAlwaysTrue(frame.kept)) statement.unfiltered.push(type === 'DeleteStmt' ? 'delete' : 'update');
    } else if (type === 'DropStmt') {
      if (frame.removeType !== undefined && DROPPED_TABLES.has(frame.removeType)) statement.tables.push(...droppedTables(frame.kept));
    } else if (type === 'SelectStmt' && this.#isTopLevel(depth)) {
      statement.limit = frame.hasInto ? null : limitOf(frame.hasLimit, frame.kept);
    }
  }

  /** A statement node that is the statement itself, or what its EXPLAIN explains. */
  #isTopLevel(depth: number): boolean {
    const f = this.#frames;
    if (depth === 4) return f[3]!.key === 'stmt';
    return depth === 6 && f[5]!.key === 'query' && f[4]!.key === 'ExplainStmt' && f[3]!.key === 'stmt';
  }
}

/** The facts of each statement of libpg-query's JSON text. */
export function factsOfTree(json: string): StatementFacts[] {
  const reader = new TreeReader(json);
  reader.read();
  return reader.statements();
}

function factsOf(s: Statement): StatementFacts {
  const kinds: string[] = [];
  for (const kind of s.kinds) if (kind !== null && !kinds.includes(kind)) kinds.push(kind);
  // A CTE's name is not a table: `WITH d AS (...) SELECT * FROM d` reads d, which is the CTE.
  const ctes = s.ctes;
  const tables = ctes === null ? s.tables : s.tables.filter((t) => t.schema !== null || !ctes.has(t.name));
  return { kinds, tables, unfiltered: s.unfiltered, limit: s.limit };
}

/** DROP TABLE a, s.b: each object is a list of name parts. */
function droppedTables(objects: unknown): TableRef[] {
  if (!Array.isArray(objects)) return [];
  const out: TableRef[] = [];
  for (const object of objects) {
    const items = isNode(object) && isNode(object.List) ? object.List.items : undefined;
    if (!Array.isArray(items)) continue;
    const parts = items.map((item) => (isNode(item) && isNode(item.String) ? item.String.sval : undefined)).filter((s): s is string => typeof s === 'string');
    const name = parts.at(-1);
    if (name !== undefined) out.push({ schema: parts.length > 1 ? parts.at(-2)!.toLowerCase() : null, name: name.toLowerCase() });
  }
  return out;
}

/** A top-level SELECT's LIMIT, from its limitCount node. */
function limitOf(hasLimit: boolean, count: unknown): Limit {
  if (!hasLimit) return 'none';
  const constant = isNode(count) ? count.A_Const : undefined;
  if (!isNode(constant)) return 'unknown';
  if (constant.isnull === true) return 'none';
  if (isNode(constant.ival)) return typeof constant.ival.ival === 'number' ? constant.ival.ival : 0;
  if (isNode(constant.fval) && typeof constant.fval.fval === 'string') {
    const n = Number(constant.fval.fval);
    return Number.isFinite(n) ? n : 'unknown';
  }
  return 'unknown';
}
