/**
 * PURE: what the sql evaluator's rules need from a PostgreSQL parse tree (libpg-query's
 * JSON), one statement at a time: the kinds of statement it holds (nested ones included: a
 * DELETE inside a CTE deletes), the tables it names (joins, subqueries, CTEs, DROP and
 * TRUNCATE targets), the DELETEs and UPDATEs without WHERE, and a SELECT's LIMIT. The
 * walk is iterative, so a deep tree cannot overflow the stack.
 */

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
  /** The statement's own kind first, then nested kinds; other statements as their node name (`copy`, `do`). */
  readonly kinds: readonly string[];
  readonly tables: readonly TableRef[];
  /** `delete` / `update` for each such statement without WHERE, nested ones included. */
  readonly unfiltered: readonly ('delete' | 'update')[];
  /** The limit of a top-level SELECT; null for other statements. */
  readonly limit: Limit | null;
}

type Node = Record<string, unknown>;

const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The kind of a statement node type (`DeleteStmt` -> delete), or null for a node that is not a statement. */
export function kindOf(type: string, body: Node): string | null {
  if (!type.endsWith('Stmt')) return null;
  switch (type) {
    case 'SelectStmt':
      // SELECT ... INTO makes a table.
      return body.intoClause !== undefined ? 'create' : 'select';
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
      return body.is_grant === true ? 'grant' : 'revoke';
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

/** Facts of one statement: `root` is libpg-query's `{SelectStmt: {...}}` wrapper. */
export function factsOf(root: Node): StatementFacts {
  const kinds: string[] = [];
  const tables: TableRef[] = [];
  const unfiltered: ('delete' | 'update')[] = [];
  const ctes = new Set<string>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
      continue;
    }
    if (!isNode(value)) continue;
    if (typeof value.relname === 'string') {
      tables.push({ schema: typeof value.schemaname === 'string' ? value.schemaname.toLowerCase() : null, name: value.relname.toLowerCase() });
    }
    if (typeof value.ctename === 'string') ctes.add(value.ctename.toLowerCase());
    for (const [key, child] of Object.entries(value)) {
      if (isNode(child)) {
        const kind = kindOf(key, child);
        if (kind !== null && !kinds.includes(kind)) kinds.push(kind);
        if ((key === 'DeleteStmt' || key === 'UpdateStmt') && child.whereClause === undefined) {
          unfiltered.push(key === 'DeleteStmt' ? 'delete' : 'update');
        }
        if (key === 'DropStmt' && typeof child.removeType === 'string' && DROPPED_TABLES.has(child.removeType)) {
          tables.push(...droppedTables(child.objects));
        }
      }
      if (typeof child === 'object' && child !== null) stack.push(child);
    }
  }
  // A CTE's name is not a table: `WITH d AS (...) SELECT * FROM d` reads d, which is the CTE.
  const real = tables.filter((t) => t.schema !== null || !ctes.has(t.name));
  return { kinds, tables: real, unfiltered, limit: limitOf(root) };
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

/** The LIMIT of a top-level SELECT (EXPLAIN looks through to it). */
function limitOf(root: Node): Limit | null {
  let select = root.SelectStmt;
  if (isNode(root.ExplainStmt) && isNode(root.ExplainStmt.query)) select = root.ExplainStmt.query.SelectStmt;
  if (!isNode(select) || select.intoClause !== undefined) return null;
  const count = select.limitCount;
  if (count === undefined) return 'none';
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
