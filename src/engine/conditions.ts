/**
 * PURE: condition trees, evaluated against one step. A leaf runs its evaluator on the
 * value its selector finds; and/or short-circuit in order, not inverts. A leaf's failure
 * aborts the tree as a LeafFailure carrying that leaf's on_error. Synchronous unless an
 * evaluator answers with a promise.
 */
import type { OnError } from '../model/index.js';
import type { EvaluatorOutcome } from '../evaluators/types.js';
import { truncate } from '../evaluators/text.js';
import { NodeKind, type CompiledLeaf, type CompiledNode } from './compiled.js';
import { presentOutcome } from './present.js';
import { selectValue, type StepView } from './select.js';

/** What an evaluator says about a value it was not given (the selector found nothing). */
export const NOTHING: EvaluatorOutcome = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });

export type Pending<T> = T | Promise<T>;

/** What a condition tree (or a leaf on the detailed path) produced, with the value it looked at. */
export interface Verdict {
  outcome: EvaluatorOutcome;
  value: unknown;
}

/** An evaluator failure inside a condition tree, carrying the failing leaf's on_error. */
export class LeafFailure extends Error {
  constructor(
    override readonly cause: unknown,
    readonly onError: OnError | undefined,
  ) {
    super(messageOf(cause));
  }
}

export function evalLeaf(leaf: CompiledLeaf, view: StepView): Pending<Verdict> {
  const value = selectValue(leaf.selector, view);
  if (value === undefined) return { outcome: NOTHING, value };
  const out = leaf.check(value, view.memo, view);
  const shown = (o: EvaluatorOutcome): Verdict => ({ outcome: isPlain(o) ? o : presentOutcome(o, view.memo.text(value), leaf.reveal), value });
  return isThenable(out) ? out.then(shown) : shown(out);
}

/** An outcome that says nothing beyond "no match": shown as the control's plain non-match. */
export function isPlain(o: EvaluatorOutcome): boolean {
  return o.matched !== true && o.confidence === 1 && o.message == null && o.metadata == null;
}

/** Condition trees: and/or short-circuit in order, not inverts. Leaf errors abort the tree. */
export function evalNode(node: CompiledNode, view: StepView): Pending<Verdict> {
  switch (node.kind) {
    case NodeKind.Leaf: {
      let v: Pending<Verdict>;
      try {
        v = evalLeaf(node, view);
      } catch (err) {
        throw new LeafFailure(err, node.onError);
      }
      if (isThenable(v)) {
        return v.then(undefined, (err: unknown) => {
          throw new LeafFailure(err, node.onError);
        });
      }
      return v;
    }
    case NodeKind.Not: {
      const v = evalNode(node.child, view);
      return isThenable(v) ? v.then(negate) : negate(v);
    }
    case NodeKind.And:
    case NodeKind.Or:
      return evalList(node.kind === NodeKind.And, node.children, 0, view, []);
  }
}

function evalList(
  isAnd: boolean,
  children: readonly CompiledNode[],
  from: number,
  view: StepView,
  matched: Verdict[],
): Pending<Verdict> {
  for (let i = from; i < children.length; i++) {
    const v = evalNode(children[i]!, view);
    if (isThenable(v)) {
      return v.then((r) => settle(isAnd, r, matched) ?? evalList(isAnd, children, i + 1, view, matched));
    }
    const done = settle(isAnd, v, matched);
    if (done) return done;
  }
  return finish(isAnd, matched);
}

/** Returns the list's verdict when this child decides it (and: a non-match; or: a match). */
function settle(isAnd: boolean, v: Verdict, matched: Verdict[]): Verdict | undefined {
  if (isAnd) {
    if (!v.outcome.matched) return { outcome: NOTHING, value: undefined };
    matched.push(v);
    return undefined;
  }
  return v.outcome.matched ? v : undefined;
}

function finish(isAnd: boolean, matched: Verdict[]): Verdict {
  if (!isAnd) return { outcome: NOTHING, value: undefined };
  const messages = matched.map((m) => m.outcome.message).filter((m): m is string => typeof m === 'string' && m !== '');
  const found = matched.flatMap((m) => m.outcome.found ?? []);
  return {
    outcome: {
      matched: true,
      confidence: Math.min(...matched.map((m) => m.outcome.confidence)),
      message: messages.length > 0 ? messages.join('; ') : null,
      metadata: null,
      found: found.length > 0 ? found : null,
    },
    value: matched[0]?.value,
  };
}

function negate(v: Verdict): Verdict {
  return {
    outcome: {
      matched: !v.outcome.matched,
      confidence: v.outcome.confidence,
      message: v.outcome.matched ? null : 'negated condition did not match',
      metadata: null,
    },
    value: v.value,
  };
}

export function messageOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return truncate(text === '' ? 'evaluator failed' : text, 1000);
}

export function isThenable<T>(value: Pending<T>): value is Promise<T> {
  return typeof (value as { then?: unknown }).then === 'function';
}
