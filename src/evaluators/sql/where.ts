/**
 * PURE: whether a WHERE clause (libpg-query's node, as TreeReader builds it) selects every
 * row, so that require_where counts `DELETE FROM orders WHERE 2 > 1` as a DELETE without
 * WHERE. A WHERE that names no column cannot tell one row from another: it selects all
 * rows or none. So a condition without a column reference counts as always true unless
 * its value is known to be false or NULL (constant.ts works it out exactly, or not at all).
 * With columns: `OR` with an always-true arm, `AND` whose arms all are, `NOT` of what is
 * always false, and a column compared with itself (`id = id`, `id >= id`, `id IS NOT
 * DISTINCT FROM id`). It does not decide whether an arbitrary condition holds for every row.
 */
import { valueOf } from './constant.js';
import { isNode, type Node } from './nodes.js';

/**
 * Nesting deeper than this (`NOT NOT ... true`) is not looked through: it is taken as always
 * true, so a guard answers what it cannot read by failing closed.
 */
const MAX_DEPTH = 200;

class TooDeep extends Error {}

export function isAlwaysTrue(where: unknown): boolean {
  try {
    return always(where, 0, new WeakSet());
  } catch (err) {
    if (err instanceof TooDeep) return true;
    throw err;
  }
}

// always/never stop at the first arm that decides (`every`, `some`): a WHERE of thousands of
// `AND` arms is decided by its first arm that can be false.
function always(node: unknown, depth: number, columnFree: WeakSet<object>): boolean {
  if (depth > MAX_DEPTH) throw new TooDeep();
  if (!isNode(node)) return false;
  if (!hasColumn(node, 0, columnFree)) {
    // A constant that is not known to be false or NULL may select every row.
    const value = valueOf(node);
    return value !== false && value !== null;
  }
  if (isNode(node.BoolExpr)) {
    const { boolop, args } = node.BoolExpr;
    if (!Array.isArray(args)) return false;
    if (boolop === 'OR_EXPR') return args.some((a) => always(a, depth + 1, columnFree));
    if (boolop === 'AND_EXPR') return args.every((a) => always(a, depth + 1, columnFree));
    return boolop === 'NOT_EXPR' && args.length === 1 && never(args[0], depth + 1, columnFree);
  }
  return isNode(node.A_Expr) && isSelfComparison(node.A_Expr);
}

function never(node: unknown, depth: number, columnFree: WeakSet<object>): boolean {
  if (depth > MAX_DEPTH) throw new TooDeep();
  if (!isNode(node)) return false;
  if (!hasColumn(node, 0, columnFree)) {
    const value = valueOf(node);
    return value === false || value === null;
  }
  if (isNode(node.BoolExpr)) {
    const { boolop, args } = node.BoolExpr;
    if (!Array.isArray(args)) return false;
    if (boolop === 'AND_EXPR') return args.some((a) => never(a, depth + 1, columnFree));
    if (boolop === 'OR_EXPR') return args.every((a) => never(a, depth + 1, columnFree));
    return boolop === 'NOT_EXPR' && args.length === 1 && always(args[0], depth + 1, columnFree);
  }
  return false;
}

/**
 * Whether a column is referenced anywhere below `node` (subqueries included). Subtrees found
 * without one are remembered for the rest of the clause: each level of `NOT (NOT (...))`
 * asks again, and a column-free subtree is walked once.
 */
function hasColumn(node: unknown, depth: number, columnFree: WeakSet<object>): boolean {
  // Each level of a condition is a few levels of nodes (`{"BoolExpr":{"args":[...]}}`).
  if (depth > 4 * MAX_DEPTH) throw new TooDeep();
  if (typeof node !== 'object' || node === null || columnFree.has(node)) return false;
  if (Array.isArray(node)) {
    for (const item of node) if (hasColumn(item, depth + 1, columnFree)) return true;
  } else {
    // WHERE CURRENT OF a cursor names one row, as a column would.
    if ('ColumnRef' in node || 'CurrentOfExpr' in node) return true;
    for (const key in node) if (hasColumn((node as Node)[key], depth + 1, columnFree)) return true;
  }
  columnFree.add(node);
  return false;
}

/** Operators true when both sides are the same non-null column. */
const REFLEXIVE = new Set(['=', '>=', '<=']);

/** `id = id`, `o.id >= o.id`, `id IS NOT DISTINCT FROM id`: the same column on both sides. */
function isSelfComparison(expr: Node): boolean {
  if (expr.kind === 'AEXPR_OP') {
    const op: unknown = Array.isArray(expr.name) && expr.name.length === 1 ? expr.name[0] : undefined;
    if (!isNode(op) || !isNode(op.String) || typeof op.String.sval !== 'string' || !REFLEXIVE.has(op.String.sval)) return false;
  } else if (expr.kind !== 'AEXPR_NOT_DISTINCT') return false;
  const left = columnOf(expr.lexpr);
  return left !== undefined && left === columnOf(expr.rexpr);
}

/** A column reference as a comparable text (`["o","id"]`); undefined for anything else. */
function columnOf(node: unknown): string | undefined {
  if (!isNode(node)) return undefined;
  const column = node.ColumnRef;
  if (!isNode(column) || !Array.isArray(column.fields)) return undefined;
  const names = column.fields.map((f) => (isNode(f) && isNode(f.String) && typeof f.String.sval === 'string' ? f.String.sval : undefined));
  return names.every((n) => n !== undefined) ? JSON.stringify(names) : undefined;
}

