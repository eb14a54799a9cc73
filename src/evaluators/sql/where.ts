/**
 * PURE: whether a WHERE clause (libpg-query's node, as TreeReader builds it) is true for
 * every row, so that `DELETE FROM orders WHERE true` counts as a DELETE without WHERE for
 * require_where. The forms recognised, and nothing cleverer:
 * - the literal `true`;
 * - `=` between two identical constants (`1 = 1`, `'a' = 'a'`; not NULL) or the same
 *   column twice (`id = id`, true on every row whose id is not null);
 * - `OR` with an arm that is always true, `AND` whose arms all are;
 * - `NOT` of what is always false: the literal `false`, an `AND` with an always-false arm,
 *   an `OR` whose arms all are, `NOT` of what is always true.
 * require_where guards against forgetting the WHERE and against these cheap ways around it;
 * it does not decide whether an arbitrary condition holds for every row.
 */
import { isNode, type Node } from './nodes.js';

/**
 * Nesting deeper than this (`NOT NOT ... true`) is not looked through: it is taken as always
 * true, so a guard answers what it cannot read by failing closed.
 */
const MAX_DEPTH = 200;

class TooDeep extends Error {}

export function isAlwaysTrue(where: unknown): boolean {
  try {
    return alwaysTrue(where, 0);
  } catch (err) {
    if (err instanceof TooDeep) return true;
    throw err;
  }
}

function alwaysTrue(where: unknown, depth: number): boolean {
  if (depth > MAX_DEPTH) throw new TooDeep();
  if (!isNode(where)) return false;
  if (isNode(where.A_Const)) return booleanOf(where.A_Const) === true;
  if (isNode(where.BoolExpr)) {
    const { boolop, args } = where.BoolExpr;
    if (!Array.isArray(args)) return false;
    if (boolop === 'OR_EXPR') return args.some((a) => alwaysTrue(a, depth + 1));
    if (boolop === 'AND_EXPR') return args.every((a) => alwaysTrue(a, depth + 1));
    if (boolop === 'NOT_EXPR') return args.length === 1 && alwaysFalse(args[0], depth + 1);
    return false;
  }
  if (isNode(where.A_Expr)) return isSelfEquality(where.A_Expr);
  return false;
}

function alwaysFalse(where: unknown, depth: number): boolean {
  if (depth > MAX_DEPTH) throw new TooDeep();
  if (!isNode(where)) return false;
  if (isNode(where.A_Const)) return booleanOf(where.A_Const) === false;
  if (isNode(where.BoolExpr)) {
    const { boolop, args } = where.BoolExpr;
    if (!Array.isArray(args)) return false;
    if (boolop === 'AND_EXPR') return args.some((a) => alwaysFalse(a, depth + 1));
    if (boolop === 'OR_EXPR') return args.every((a) => alwaysFalse(a, depth + 1));
    if (boolop === 'NOT_EXPR') return args.length === 1 && alwaysTrue(args[0], depth + 1);
  }
  return false;
}

/** `true` / `false` for a boolean constant (libpg-query omits false: `{"boolval":{}}`), else undefined. */
function booleanOf(constant: Node): boolean | undefined {
  return isNode(constant.boolval) ? constant.boolval.boolval === true : undefined;
}

/** `x = x`: `=` between two operands that are the same constant (not NULL) or the same column. */
function isSelfEquality(expr: Node): boolean {
  if (expr.kind !== 'AEXPR_OP' || !Array.isArray(expr.name) || expr.name.length !== 1) return false;
  const op: unknown = expr.name[0];
  if (!isNode(op) || !isNode(op.String) || op.String.sval !== '=') return false;
  const left = operandOf(expr.lexpr);
  return left !== undefined && left === operandOf(expr.rexpr);
}

/** A constant or a column reference written as a comparable text (`i:1`, `s:a`, `c:o.id`); undefined for anything else. */
function operandOf(node: unknown): string | undefined {
  if (!isNode(node)) return undefined;
  const constant = node.A_Const;
  if (isNode(constant)) {
    if (constant.isnull === true) return undefined;
    for (const kind of ['ival', 'fval', 'sval', 'bsval', 'boolval'] as const) {
      const box = constant[kind];
      if (isNode(box)) return `${kind}:${JSON.stringify(box[kind] ?? null)}`;
    }
    return undefined;
  }
  const column = node.ColumnRef;
  if (isNode(column) && Array.isArray(column.fields)) {
    const names = column.fields.map((f) => (isNode(f) && isNode(f.String) && typeof f.String.sval === 'string' ? f.String.sval : undefined));
    return names.every((n) => n !== undefined) ? `c:${JSON.stringify(names)}` : undefined;
  }
  return undefined;
}
