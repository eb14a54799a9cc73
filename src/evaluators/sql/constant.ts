/**
 * PURE: the value of a constant SQL expression (libpg-query's nodes, no column in it), as far
 * as it can be known exactly: numbers as exact decimals (PostgreSQL's numeric literals are
 * exact, so `0.1 + 0.2 = 0.3` is true and `1 < 1.000000000000000000001` too), strings,
 * booleans and NULL, with = <> < > <= >=, + - *, ||, IN, IS [NOT] NULL, NOT/AND/OR. Anything
 * else (a function call, a cast, a string ordering that depends on the collation, division)
 * is UNKNOWN. where.ts uses it to tell a WHERE that selects every row from one that selects none.
 */
import { isNode, type Node } from './nodes.js';

/** An exact decimal: `digits / 10^scale`. */
interface Decimal {
  digits: bigint;
  scale: number;
}

export type Value = Decimal | string | boolean | null;
export const UNKNOWN = Symbol('unknown');
type Result = Value | typeof UNKNOWN;

/** Numbers with more digits than this are not worked with (10^scale stays small). */
const MAX_SCALE = 1000;

const isDecimal = (v: Result): v is Decimal => typeof v === 'object' && v !== null;

function decimalOf(text: string): Decimal | undefined {
  const m = /^(\d*)(?:\.(\d*))?(?:e([+-]?\d+))?$/i.exec(text.replaceAll('_', ''));
  if (m === null || (m[1] === '' && (m[2] ?? '') === '')) return undefined;
  const fraction = m[2] ?? '';
  const exponent = Number(m[3] ?? '0');
  let scale = fraction.length - exponent;
  let digits = BigInt(`${m[1] || '0'}${fraction}`);
  if (Math.abs(scale) > MAX_SCALE) return undefined;
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { digits, scale };
}

function aligned(a: Decimal, b: Decimal): [bigint, bigint, number] {
  const scale = Math.max(a.scale, b.scale);
  return [a.digits * 10n ** BigInt(scale - a.scale), b.digits * 10n ** BigInt(scale - b.scale), scale];
}

/** -1, 0, 1; UNKNOWN for values whose order is not exact here (strings: collation). */
function compare(a: Value, b: Value): number | typeof UNKNOWN {
  if (isDecimal(a) && isDecimal(b)) {
    const [x, y] = aligned(a, b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return UNKNOWN;
}

/** Equality, exact for strings (byte equality: deterministic collations) and numbers; a quoted number against a number compares as numbers. */
function equal(a: Value, b: Value): boolean | typeof UNKNOWN {
  if (typeof a === 'string' && typeof b === 'string') return a === b;
  if (typeof a === 'string' && isDecimal(b)) return equalAsNumber(a, b);
  if (isDecimal(a) && typeof b === 'string') return equalAsNumber(b, a);
  const order = compare(a, b);
  return order === UNKNOWN ? UNKNOWN : order === 0;
}

function equalAsNumber(text: string, n: Decimal): boolean | typeof UNKNOWN {
  const trimmed = text.trim();
  const negative = trimmed.startsWith('-');
  const d = decimalOf(negative ? trimmed.slice(1) : trimmed);
  if (d === undefined) return UNKNOWN;
  return compare(negative ? { digits: -d.digits, scale: d.scale } : d, n) === 0;
}

/** The value of `node`, or UNKNOWN. `depth` bounds the recursion (a caller's guard). */
export function valueOf(node: unknown, depth = 0): Result {
  if (depth > 100 || !isNode(node)) return UNKNOWN;
  if (isNode(node.A_Const)) return constantOf(node.A_Const);
  if (isNode(node.A_Expr)) return exprOf(node.A_Expr, depth + 1);
  if (isNode(node.BoolExpr)) return boolOf(node.BoolExpr, depth + 1);
  if (isNode(node.NullTest)) {
    const arg = valueOf(node.NullTest.arg, depth + 1);
    if (arg === UNKNOWN) return UNKNOWN;
    return node.NullTest.nulltesttype === 'IS_NOT_NULL' ? arg !== null : arg === null;
  }
  return UNKNOWN;
}

function constantOf(c: Node): Result {
  if (c.isnull === true) return null;
  if (isNode(c.ival)) return { digits: BigInt(typeof c.ival.ival === 'number' ? c.ival.ival : 0), scale: 0 };
  if (isNode(c.fval)) return typeof c.fval.fval === 'string' ? (decimalOf(c.fval.fval) ?? UNKNOWN) : UNKNOWN;
  if (isNode(c.sval)) return typeof c.sval.sval === 'string' ? c.sval.sval : '';
  if (isNode(c.boolval)) return c.boolval.boolval === true;
  return UNKNOWN;
}

function operatorOf(expr: Node): string | undefined {
  if (!Array.isArray(expr.name) || expr.name.length !== 1) return undefined;
  const op: unknown = expr.name[0];
  return isNode(op) && isNode(op.String) && typeof op.String.sval === 'string' ? op.String.sval : undefined;
}

function exprOf(expr: Node, depth: number): Result {
  const op = operatorOf(expr);
  if (expr.kind === 'AEXPR_IN' && Array.isArray(expr.rexpr)) {
    const left = valueOf(expr.lexpr, depth);
    if (left === UNKNOWN) return UNKNOWN;
    const found = anyEqual(left, expr.rexpr, depth);
    if (found === UNKNOWN || found === null) return found;
    return op === '<>' ? !found : found;
  }
  if (expr.kind !== 'AEXPR_OP' || op === undefined) return UNKNOWN;
  if (expr.lexpr === undefined) {
    const right = valueOf(expr.rexpr, depth);
    if (op === '-' && isDecimal(right)) return { digits: -right.digits, scale: right.scale };
    return op === '+' && isDecimal(right) ? right : UNKNOWN;
  }
  const left = valueOf(expr.lexpr, depth);
  const right = valueOf(expr.rexpr, depth);
  if (left === UNKNOWN || right === UNKNOWN) return UNKNOWN;
  if (left === null || right === null) return ['=', '<>', '!=', '<', '>', '<=', '>=', '+', '-', '*', '||'].includes(op) ? null : UNKNOWN;
  switch (op) {
    case '=':
    case '<>':
    case '!=': {
      const eq = equal(left, right);
      return eq === UNKNOWN ? UNKNOWN : op === '=' ? eq : !eq;
    }
    case '<':
    case '>':
    case '<=':
    case '>=': {
      const order = compare(left, right);
      if (order === UNKNOWN) return UNKNOWN;
      return op === '<' ? order < 0 : op === '>' ? order > 0 : op === '<=' ? order <= 0 : order >= 0;
    }
    case '+':
    case '-':
    case '*': {
      if (!isDecimal(left) || !isDecimal(right)) return UNKNOWN;
      if (op === '*') return { digits: left.digits * right.digits, scale: left.scale + right.scale };
      const [x, y, scale] = aligned(left, right);
      return { digits: op === '+' ? x + y : x - y, scale };
    }
    case '||':
      return typeof left === 'string' && typeof right === 'string' ? left + right : UNKNOWN;
  }
  return UNKNOWN;
}

/** `x IN (a, b)`: true when one equals, null when none does but one is NULL, false when none. */
function anyEqual(left: Value, items: unknown[], depth: number): boolean | null | typeof UNKNOWN {
  if (left === null) return null;
  let sawNull = false;
  for (const item of items) {
    const v = valueOf(item, depth);
    if (v === UNKNOWN) return UNKNOWN;
    if (v === null) {
      sawNull = true;
      continue;
    }
    const eq = equal(left, v);
    if (eq === UNKNOWN) return UNKNOWN;
    if (eq) return true;
  }
  return sawNull ? null : false;
}

function boolOf(expr: Node, depth: number): Result {
  const args = Array.isArray(expr.args) ? expr.args.map((a) => valueOf(a, depth)) : [];
  if (args.some((a) => a === UNKNOWN || (a !== null && typeof a !== 'boolean'))) return UNKNOWN;
  const values = args as (boolean | null)[];
  switch (expr.boolop) {
    case 'NOT_EXPR':
      return values.length === 1 ? (values[0] === null ? null : !values[0]) : UNKNOWN;
    case 'AND_EXPR':
      return values.includes(false) ? false : values.includes(null) ? null : true;
    case 'OR_EXPR':
      return values.includes(true) ? true : values.includes(null) ? null : false;
  }
  return UNKNOWN;
}
