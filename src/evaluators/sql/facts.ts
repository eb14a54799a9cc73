/**
 * PURE: what the sql evaluator's rules need from a PostgreSQL parse tree, one statement at a
 * time: the kinds of statement it holds (nested ones included: a DELETE inside a CTE
 * deletes, a DROP inside a DO block drops), the tables it names (joins, subqueries, CTE
 * bodies, DROP and TRUNCATE targets, DML targets; never a CTE's own name where it hides a
 * table), the DELETEs and UPDATEs without WHERE, and a SELECT's LIMIT. tree-reader.ts reads
 * them from the parser's JSON text; bodies.ts adds what the statement's bodies (DO blocks,
 * function and procedure bodies) hold.
 */
import { isNode } from './nodes.js';

export const OPERATIONS = [
  'select',
  'insert',
  'update',
  'delete',
  'drop',
  'truncate',
  'alter',
  'create',
  'grant',
  'revoke',
  'merge',
  'do',
  'copy',
  'copy_program',
  'create_function',
  'file_access',
] as const;
export type Operation = (typeof OPERATIONS)[number];

export interface TableRef {
  /** Lowercased; null when the statement does not qualify the table. */
  readonly schema: string | null;
  readonly name: string;
}

/** A SELECT's row limit: a number, none (no LIMIT, or LIMIT ALL), or not a constant. */
export type Limit = number | 'none' | 'unknown';

export interface StatementFacts {
  /** The statement's own kind first, then nested kinds; other statements as their node name (`vacuum`, `call`). */
  readonly kinds: readonly string[];
  /** In the order written (a body's tables after the statement's own). */
  readonly tables: readonly TableRef[];
  /** `delete` / `update` for each such statement without WHERE (or with an always-true one, where.ts), nested ones included. */
  readonly unfiltered: readonly ('delete' | 'update')[];
  /** The limit of a top-level SELECT; null for other statements. */
  readonly limit: Limit | null;
  /** Why a body of the statement could not be read (a dynamic EXECUTE, an unknown language); null when all were. */
  readonly unreadable: string | null;
  /** The statement may change search_path (`SET search_path`, `set_config('search_path', ...)`). */
  readonly setsSearchPath: boolean;
}

/** Code PostgreSQL runs later that the statement carries as a string: a DO block, a function or procedure body. */
export interface Body {
  readonly what: 'DO block' | 'function body';
  /** As the parser gives it (an unquoted name is lowercased); null when none is given. */
  readonly language: string | null;
  /** The code; null when it is not one string (a C function's file and symbol). */
  readonly source: string | null;
}

/** A statement's facts as read from its tree, before its bodies are read. */
export interface ReadStatement extends StatementFacts {
  readonly bodies: readonly Body[];
  /** The statement's place in the parsed text, in UTF-8 bytes (length 0: to the end). */
  readonly location: number;
  readonly length: number;
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

/** What a MERGE's WHEN clause does (`CMD_DELETE` -> delete). */
export function mergeKindOf(commandType: string | undefined): string | null {
  if (commandType === 'CMD_DELETE') return 'delete';
  if (commandType === 'CMD_UPDATE') return 'update';
  return commandType === 'CMD_INSERT' ? 'insert' : null;
}

/**
 * Built-in functions that read or write files on the database server, or list its
 * directories (`file_access`): the generic file access functions and the large-object
 * import/export ones.
 */
export const FILE_FUNCTIONS = new Set([
  'pg_read_file',
  'pg_read_binary_file',
  'pg_ls_dir',
  'pg_stat_file',
  'lo_import',
  'lo_export',
  'pg_file_write',
  'pg_file_rename',
  'pg_file_unlink',
  'pg_ls_waldir',
  'pg_ls_logdir',
  'pg_ls_tmpdir',
  'pg_ls_archive_statusdir',
  'pg_ls_logicalsnapdir',
  'pg_ls_logicalmapdir',
  'pg_ls_replslotdir',
  'pg_current_logfile',
]);

/**
 * Functions that run SQL given as a string (dblink's, the query_to_xml family, ts_stat,
 * ts_rewrite's query form) or read a table, cursor, schema or database named by a value:
 * what they do is not in the parse tree, so a call makes the statement unreadable.
 */
export const SQL_TEXT_FUNCTIONS = new Set([
  'dblink',
  'dblink_exec',
  'dblink_send_query',
  'dblink_open',
  'dblink_fetch',
  'query_to_xml',
  'query_to_xmlschema',
  'query_to_xml_and_xmlschema',
  'table_to_xml',
  'table_to_xmlschema',
  'table_to_xml_and_xmlschema',
  'cursor_to_xml',
  'cursor_to_xmlschema',
  'database_to_xml',
  'database_to_xmlschema',
  'database_to_xml_and_xmlschema',
  'schema_to_xml',
  'schema_to_xmlschema',
  'schema_to_xml_and_xmlschema',
  'ts_stat',
  'ts_rewrite',
]);

/** DROP targets that are tables (or read like them). */
export const DROPPED_TABLES = new Set(['OBJECT_TABLE', 'OBJECT_VIEW', 'OBJECT_MATVIEW', 'OBJECT_FOREIGN_TABLE', 'OBJECT_SEQUENCE', 'OBJECT_INDEX']);

/** DROP TABLE a, s.b: each object is a list of name parts. */
export function droppedTables(objects: unknown): TableRef[] {
  if (!Array.isArray(objects)) return [];
  const out: TableRef[] = [];
  for (const object of objects) {
    const items = isNode(object) && isNode(object.List) ? object.List.items : undefined;
    if (!Array.isArray(items)) continue;
    const parts = items.map(stringOf).filter((s): s is string => s !== undefined);
    const name = parts.at(-1);
    if (name !== undefined) out.push({ schema: parts.length > 1 ? parts.at(-2)!.toLowerCase() : null, name: name.toLowerCase() });
  }
  return out;
}

/** A top-level SELECT's LIMIT, from its limitCount node. */
export function limitOf(hasLimit: boolean, count: unknown): Limit {
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

/**
 * The body of a DO statement (its `args`) or of CREATE FUNCTION / PROCEDURE (its `options`);
 * null for a function written as BEGIN ATOMIC or RETURN, whose body is part of the tree.
 */
export function bodyOf(type: 'DoStmt' | 'CreateFunctionStmt', elements: unknown): Body | null {
  let language: string | null = type === 'DoStmt' ? 'plpgsql' : null;
  let source: string | null = null;
  let found = false;
  for (const element of Array.isArray(elements) ? elements : []) {
    const def = isNode(element) && isNode(element.DefElem) ? element.DefElem : undefined;
    if (def === undefined) continue;
    if (def.defname === 'language') language = stringOf(def.arg) ?? null;
    else if (def.defname === 'as') {
      found = true;
      // CREATE FUNCTION ... AS 'body' is a list of one string; AS 'file', 'symbol' of two.
      const items = isNode(def.arg) && isNode(def.arg.List) && Array.isArray(def.arg.List.items) ? def.arg.List.items : [def.arg];
      source = items.length === 1 ? (stringOf(items[0]) ?? null) : null;
    }
  }
  if (!found) return null;
  return { what: type === 'DoStmt' ? 'DO block' : 'function body', language, source };
}

/** A String node's text (libpg-query leaves out an empty sval). */
function stringOf(node: unknown): string | undefined {
  if (!isNode(node) || !isNode(node.String)) return undefined;
  const s = node.String.sval;
  return typeof s === 'string' ? s : '';
}
