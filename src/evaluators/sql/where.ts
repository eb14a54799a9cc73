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

/** The target's names for the clause being decided (the module is synchronous: set per call). */
let targetNames: ReadonlySet<string> = new Set();

/** `target`: the names the statement's target table goes by (`t.id` and `id` are then one column). */
export function isAlwaysTrue(where: unknown, target: ReadonlySet<string> = new Set()): boolean {
  try {
    targetNames = target;
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
    if (boolop === 'OR_EXPR') return args.some((a) => always(a, depth + 1, columnFree)) || coversNull(args);
    if (boolop === 'AND_EXPR') return args.every((a) => always(a, depth + 1, columnFree));
    return boolop === 'NOT_EXPR' && args.length === 1 && never(args[0], depth + 1, columnFree);
  }
  return isNode(node.A_Expr) && isSelfComparison(node.A_Expr);
}

/** `x IS NULL OR x IS NOT NULL`: one arm of each for the same expression. */
function coversNull(args: unknown[]): boolean {
  const isNull = new Set<string>();
  const notNull = new Set<string>();
  for (const a of args) {
    const test = isNode(a) ? a.NullTest : undefined;
    if (!isNode(test)) continue;
    const key = sameAs(test.arg, 0);
    if (key === undefined) continue;
    (test.nulltesttype === 'IS_NULL' ? isNull : notNull).add(key);
  }
  for (const key of isNull) if (notNull.has(key)) return true;
  return false;
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
  return isNode(node.A_Expr) && isSelfContradiction(node.A_Expr);
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

/** Operators true when both sides are the same non-null value. */
const REFLEXIVE = new Set(['=', '>=', '<=']);
/** Operators false when both sides are the same value. */
const IRREFLEXIVE = new Set(['<>', '<', '>']);

function operatorOf(expr: Node): string | undefined {
  const op: unknown = Array.isArray(expr.name) && expr.name.length === 1 ? expr.name[0] : undefined;
  return isNode(op) && isNode(op.String) && typeof op.String.sval === 'string' ? op.String.sval : undefined;
}

/**
 * `id = id`, `t.id >= id`, `id IS NOT DISTINCT FROM id`, `id IN (id)`, `id = ANY(ARRAY[id])`,
 * `id BETWEEN id AND id`: the same expression (sameAs) on both sides.
 */
function isSelfComparison(expr: Node): boolean {
  const left = sameAs(expr.lexpr, 0);
  if (left === undefined) return false;
  const op = operatorOf(expr);
  switch (expr.kind) {
    case 'AEXPR_OP':
      return op !== undefined && REFLEXIVE.has(op) && left === sameAs(expr.rexpr, 0);
    case 'AEXPR_NOT_DISTINCT':
      return left === sameAs(expr.rexpr, 0);
    case 'AEXPR_IN':
      return op === '=' && itemsOf(expr.rexpr).some((e) => sameAs(e, 0) === left);
    case 'AEXPR_OP_ANY': {
      const array = isNode(expr.rexpr) ? expr.rexpr.A_ArrayExpr : undefined;
      return op !== undefined && REFLEXIVE.has(op) && isNode(array) && Array.isArray(array.elements) && array.elements.some((e) => sameAs(e, 0) === left);
    }
    case 'AEXPR_BETWEEN':
    case 'AEXPR_BETWEEN_SYM':
      return itemsOf(expr.rexpr).length === 2 && itemsOf(expr.rexpr).every((e) => sameAs(e, 0) === left);
  }
  return false;
}

/** `id <> id`, `id < id`, `id IS DISTINCT FROM id`: false for every row (so `NOT (id <> id)` selects them all). */
function isSelfContradiction(expr: Node): boolean {
  const left = sameAs(expr.lexpr, 0);
  if (left === undefined || left !== sameAs(expr.rexpr, 0)) return false;
  if (expr.kind === 'AEXPR_DISTINCT') return true;
  const op = operatorOf(expr);
  return expr.kind === 'AEXPR_OP' && op !== undefined && IRREFLEXIVE.has(op);
}

/**
 * An expression as a comparable text, the same for spellings of one value: a column by its
 * last name (`t.id` ~ `id`: in a DELETE's WHERE both name the target's column), casts,
 * `+ 0` / `- 0`, a scalar `(SELECT x)` without FROM looked through, function calls compared
 * by name and arguments. Undefined for anything else. Counting a volatile function call
 * (`random() = random()`) as the same errs towards matching, which is the safe side here.
 */
function sameAs(node: unknown, depth: number): string | undefined {
  if (depth > 50 || !isNode(node)) return undefined;
  if (isNode(node.ColumnRef)) {
    const fields = node.ColumnRef.fields;
    if (!Array.isArray(fields)) return undefined;
    const names = fields.map((f) => (isNode(f) && isNode(f.String) && typeof f.String.sval === 'string' ? f.String.sval : undefined));
    if (names.length === 0 || names.some((n) => n === undefined)) return undefined;
    // A qualifier naming the target is dropped; another table's (`USING u ... t.id = u.id`) is kept.
    const qualifier = names.length > 1 ? names.at(-2)! : undefined;
    return qualifier === undefined || targetNames.has(qualifier) ? `c:${names.at(-1)}` : `c:${qualifier}.${names.at(-1)}`;
  }
  if (isNode(node.TypeCast)) return sameAs(node.TypeCast.arg, depth + 1);
  if (isNode(node.A_Const)) {
    const { location: _, ...value } = node.A_Const;
    return `k:${JSON.stringify(value)}`;
  }
  const expr = node.A_Expr;
  if (isNode(expr) && expr.kind === 'AEXPR_OP') {
    const op = operatorOf(expr);
    if ((op === '+' || op === '-') && isZero(expr.rexpr)) return sameAs(expr.lexpr, depth + 1);
    if (op === '+' && isZero(expr.lexpr)) return sameAs(expr.rexpr, depth + 1);
    return undefined;
  }
  const link = node.SubLink;
  if (isNode(link) && link.subLinkType === 'EXPR_SUBLINK' && isNode(link.subselect)) {
    const select = link.subselect.SelectStmt;
    if (!isNode(select) || !Array.isArray(select.targetList) || select.targetList.length !== 1) return undefined;
    if (Object.keys(select).some((key) => key !== 'targetList' && key !== 'limitOption' && key !== 'op')) return undefined;
    const target: unknown = select.targetList[0];
    return isNode(target) && isNode(target.ResTarget) ? sameAs(target.ResTarget.val, depth + 1) : undefined;
  }
  const call = node.FuncCall;
  if (isNode(call) && Array.isArray(call.funcname)) {
    const args = Array.isArray(call.args) ? call.args.map((a) => sameAs(a, depth + 1)) : [];
    if (args.some((a) => a === undefined)) return undefined;
    return `f:${JSON.stringify(call.funcname.map((n) => (isNode(n) && isNode(n.String) ? n.String.sval : null)))}(${args.join(',')})`;
  }
  const coalesce = node.CoalesceExpr;
  if (isNode(coalesce) && Array.isArray(coalesce.args)) {
    const args = coalesce.args.map((a) => sameAs(a, depth + 1));
    return args.some((a) => a === undefined) ? undefined : `coalesce(${args.join(',')})`;
  }
  return undefined;
}

/** An IN or BETWEEN list (`{"List":{"items":[..]}}`, or a plain array). */
function itemsOf(node: unknown): unknown[] {
  if (Array.isArray(node)) return node;
  return isNode(node) && isNode(node.List) && Array.isArray(node.List.items) ? node.List.items : [];
}

function isZero(node: unknown): boolean {
  const c = isNode(node) ? node.A_Const : undefined;
  if (!isNode(c)) return false;
  if (isNode(c.ival)) return c.ival.ival === undefined || c.ival.ival === 0;
  return isNode(c.fval) && Number(c.fval.fval) === 0;
}

/** One WHEN clause of a MERGE: what it does, when (`MERGE_WHEN_MATCHED` ...), and its AND condition. */
export interface MergeAction {
  readonly kind: string | null;
  readonly matchKind: string | undefined;
  readonly condition: unknown;
}

/**
 * The deletes and updates of a MERGE that reach every row of its target: a WHEN MATCHED
 * clause whose ON condition and own condition (if any) are always true, and every WHEN NOT
 * MATCHED BY SOURCE clause (with an ON that matches nothing, every row is unmatched).
 */
export function unfilteredMerge(on: unknown, actions: readonly MergeAction[], target: ReadonlySet<string>): ('delete' | 'update')[] {
  const out: ('delete' | 'update')[] = [];
  for (const a of actions) {
    if (a.kind !== 'delete' && a.kind !== 'update') continue;
    const bySource = a.matchKind === 'MERGE_WHEN_NOT_MATCHED_BY_SOURCE';
    if (a.matchKind !== 'MERGE_WHEN_MATCHED' && !bySource) continue;
    if ((bySource || isAlwaysTrue(on, target)) && (a.condition === undefined || isAlwaysTrue(a.condition, target))) out.push(a.kind);
  }
  return out;
}
