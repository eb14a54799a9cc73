/**
 * PURE: the frames TreeReader (tree-reader.ts) keeps while it reads a parse tree's JSON text,
 * one per depth, and which subtrees it builds as objects.
 */
import type { Node } from './nodes.js';
import type { Cte } from './scopes.js';

/** One object or array of the JSON text being read; the reader keeps one per depth and reuses it. */
export interface Frame {
  /** Its key in the parent object; '' for an array item and the root. */
  key: string;
  array: boolean;
  /** Inside a subtree a rule looks into: its value is built. */
  building: boolean;
  value: Node | unknown[] | null;
  relname: string | undefined;
  schemaname: string | undefined;
  ctename: string | undefined;
  commandType: string | undefined;
  /** A DELETE / UPDATE / MERGE target's alias. */
  alias: string | undefined;
  /** A MergeWhenClause's matchKind. */
  matchKind: string | undefined;
  /** For a statement node (its key ends in Stmt): its place in the statement's kinds; else -1. */
  kindSlot: number;
  hasInto: boolean;
  isGrant: boolean;
  isProgram: boolean;
  /** A CopyStmt's filename: a server file, or with isProgram a command. */
  hasFile: boolean;
  isFrom: boolean;
  hasWhere: boolean;
  hasLimit: boolean;
  /** FETCH FIRST n ROWS WITH TIES: more rows than n. */
  withTies: boolean;
  removeType: string | undefined;
  /** The built subtree a rule looks into: a DELETE/UPDATE's whereClause, a DROP's objects, a SELECT's limitCount, a body's options. */
  kept: unknown;
  /** The statement's refs when this frame opened. */
  refsStart: number;
  /** The CTEs of this node's WITH, and whether it is RECURSIVE. */
  ctes: Cte[] | null;
  recursive: boolean;
}

export const newFrame = (): Frame => ({
  key: '',
  array: false,
  building: false,
  value: null,
  relname: undefined,
  schemaname: undefined,
  ctename: undefined,
  commandType: undefined,
  matchKind: undefined,
  alias: undefined,
  kindSlot: -1,
  hasInto: false,
  isGrant: false,
  isProgram: false,
  hasFile: false,
  isFrom: false,
  hasWhere: false,
  hasLimit: false,
  withTies: false,
  removeType: undefined,
  kept: undefined,
  refsStart: 0,
  ctes: null,
  recursive: false,
});

/** `SelectStmt`, `DropStmt`: a key ending in Stmt (charCodeAt: endsWith is a call the JIT does not inline, on every object of the tree). */
export function isStatementType(key: string): boolean {
  const n = key.length;
  return n > 4 && key.charCodeAt(n - 1) === 0x74 && key.charCodeAt(n - 2) === 0x6d && key.charCodeAt(n - 3) === 0x74 && key.charCodeAt(n - 4) === 0x53;
}

/** The subtree under `key` of a node of type `type` that a rule looks into. */
export function keeps(type: string, key: string): boolean {
  switch (key) {
    case 'whereClause':
      return type === 'DeleteStmt' || type === 'UpdateStmt';
    case 'objects':
      return type === 'DropStmt';
    case 'joinCondition':
      return type === 'MergeStmt';
    case 'condition':
      return type === 'MergeWhenClause';
    case 'limitCount':
      return type === 'SelectStmt';
    case 'args':
      return type === 'DoStmt';
    case 'options':
      return type === 'CreateFunctionStmt';
  }
  return false;
}

/** Lists of FROM items, whose RangeVars a CTE can stand for. */
export const FROM_LISTS = new Set(['fromClause', 'usingClause']);

