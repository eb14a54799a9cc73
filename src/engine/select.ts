/**
 * Selector paths, parsed once when a control is compiled and walked per step.
 * `input.messages[0].content` and `input.messages.0.content` parse to the same walk.
 */
import { TextMemo } from '../evaluators/text.js';
import type { Counters } from '../counting/index.js';
import type { StepContext } from '../evaluators/types.js';
import type { Stage, Step } from '../model/index.js';

export const Root = { Whole: 0, Name: 1, Input: 2, Output: 3, Context: 4 } as const;
export type Root = (typeof Root)[keyof typeof Root];

export interface CompiledSelector {
  readonly path: string;
  readonly root: Root;
  readonly segments: ReadonlyArray<string | number>;
}

const ROOTS: Record<string, Root> = {
  '*': Root.Whole,
  name: Root.Name,
  input: Root.Input,
  output: Root.Output,
  context: Root.Context,
};

/** Parses a selector path; returns an error text for a path the model would reject. */
export function parseSelector(path: string): CompiledSelector | string {
  const head = /^(\*|name|input|output|context)/.exec(path);
  if (!head) return `path must start with input, output, name, context or *`;
  const root = ROOTS[head[1]!]!;
  const segments: Array<string | number> = [];
  const rest = path.slice(head[0].length);
  const part = /\.([A-Za-z0-9_$-]+)|\[(\d+)\]/y;
  let at = 0;
  while (at < rest.length) {
    part.lastIndex = at;
    const m = part.exec(rest);
    if (!m) return `cannot read "${rest.slice(at)}" in path "${path}"`;
    segments.push(m[1] ?? Number(m[2]));
    at = part.lastIndex;
  }
  if ((root === Root.Whole || root === Root.Name) && segments.length > 0) {
    return `"${head[1]}" takes no field path`;
  }
  if (root === Root.Context && segments.length === 0) return 'context needs a field: context.<field>';
  // slice: an array grown by push keeps spare capacity for 17 elements; the copy is exact.
  // Readonly by type, not frozen: see HOT_ARRAYS in evaluate.ts.
  return Object.freeze({ path, root, segments: segments.slice() });
}

/**
 * One step being evaluated; `*` builds its view of the step only when a control asks.
 * It is also what stateful checks (rate, budget) get as their StepContext.
 */
export class StepView implements StepContext {
  #whole: Record<string, unknown> | undefined;
  #memo: TextMemo | undefined;
  constructor(
    readonly step: Step,
    readonly stage: Stage,
    readonly agentName: string | undefined = undefined,
    readonly counters: Counters | undefined = undefined,
    readonly sessionId: string | undefined = undefined,
  ) {}

  /** Text of selected values, shared by this step's checks (created on first use). */
  get memo(): TextMemo {
    return (this.#memo ??= new TextMemo());
  }

  /** The step as `*` sees it: the five fields a step has, nothing else. */
  whole(): Record<string, unknown> {
    const s = this.step;
    return (this.#whole ??= { type: s.type, name: s.name, input: s.input, output: s.output, context: s.context });
  }
}

/**
 * Walks the path. Returns undefined when any part is missing (own properties only, so
 * `input.constructor` selects nothing rather than a function).
 */
export function selectValue(selector: CompiledSelector, view: StepView): unknown {
  const step = view.step;
  let cur: unknown;
  switch (selector.root) {
    case Root.Whole:
      return view.whole();
    case Root.Name:
      return step.name;
    case Root.Input:
      cur = step.input;
      break;
    case Root.Output:
      cur = step.output;
      break;
    case Root.Context:
      cur = step.context;
      break;
  }
  const segments = selector.segments;
  for (let i = 0; i < segments.length; i++) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    const key = segments[i]!;
    if (!Object.hasOwn(cur, key)) return undefined;
    cur = (cur as Record<string | number, unknown>)[key];
  }
  return cur;
}

/**
 * Whether a selector that selected nothing counts as missing: a step has no output before
 * it runs, so an `output` selector finds nothing at `pre` by design, not by mistake.
 */
export function countsAsMissing(selector: CompiledSelector, view: StepView): boolean {
  return !(selector.root === Root.Output && view.stage === 'pre');
}
