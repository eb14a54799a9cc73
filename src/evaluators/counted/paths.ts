/**
 * PURE: the selector paths a stateful evaluator's config names (`key`, `amount`), read
 * from the whole step. Same grammar as a control's selector (engine/select.ts): a root
 * (`input`, `output`, `context`, `name`) and fields below it, `a.b`, `a[0]` or `a.0`.
 */
import type { StepContext } from '../types.js';

export interface StepPath {
  readonly path: string;
  readonly root: 'name' | 'input' | 'output' | 'context';
  readonly segments: ReadonlyArray<string | number>;
}

/** Parses a path; returns a message for one that is not a selector path. */
export function parseStepPath(path: string): StepPath | string {
  const head = /^(name|input|output|context)/.exec(path);
  if (!head) return `"${path}" is not a selector path: it must start with input, output, context or name`;
  const root = head[1] as StepPath['root'];
  const rest = path.slice(head[0].length);
  const segments: Array<string | number> = [];
  const part = /\.([A-Za-z0-9_$-]+)|\[(\d+)\]/y;
  let at = 0;
  while (at < rest.length) {
    part.lastIndex = at;
    const m = part.exec(rest);
    if (!m) return `"${path}" is not a selector path: cannot read "${rest.slice(at)}"`;
    segments.push(m[1] !== undefined && /^\d+$/.test(m[1]) ? Number(m[1]) : (m[1] ?? Number(m[2])));
    at = part.lastIndex;
  }
  if (root === 'name' && segments.length > 0) return `"${path}" is not a selector path: name takes no field path`;
  if (root === 'context' && segments.length === 0) return `"${path}" is not a selector path: context needs a field (context.<field>)`;
  return Object.freeze({ path, root, segments: Object.freeze(segments) });
}

/** The value at `path` in the step (own properties only), or undefined. */
export function readStepPath(path: StepPath, ctx: StepContext): unknown {
  const step = ctx.step;
  let cur: unknown = path.root === 'name' ? step.name : step[path.root];
  for (const key of path.segments) {
    if (typeof cur !== 'object' || cur === null || !Object.hasOwn(cur, key)) return undefined;
    cur = (cur as Record<string | number, unknown>)[key];
  }
  return cur;
}
