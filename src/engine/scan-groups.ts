/**
 * Regex controls that read the same field of a step are scanned together. One RE2::Set
 * pass over the field's text tells whether any of their patterns matches; usually none
 * does, and then every one of them is a plain non-match without running one by one. When
 * the pass finds something, each member runs its own check as usual, so what a match
 * says (and everything about errors) stays exactly what the evaluator says.
 *
 * A set costs native memory, so a candidate list gets its groups only once it has been
 * evaluated HOT_AFTER times: hot lists (the agent steps a server sees all day) scan in
 * one pass, and the long tail of rarely seen ones costs nothing extra.
 */
import type { ScanHint } from '../evaluators/types.js';
import { mayMatchAny, mergePrefilters, type Prefilter } from '../evaluators/regex/literals.js';
import { compilePatternSet, type CompiledPatternSet } from '../evaluators/regex/re2.js';
import { NodeKind, type CompiledControl } from './build-control.js';
import { selectValue, type CompiledSelector, type StepView } from './select.js';
// Imported rather than the global: see evaluate.ts.
import { performance } from 'node:perf_hooks';

/** Evaluations of a candidate list before its groups are built. */
export const HOT_AFTER = 64;

export interface ScanGroup {
  readonly selector: CompiledSelector;
  readonly set: CompiledPatternSet;
  /** Positions in the candidate list. */
  readonly members: readonly number[];
  /**
   * The members' prefilters, merged (at most one folded and one exact), when every member
   * has one: a text that passes none of them matches no member, and the set's pass is
   * skipped too. Null otherwise.
   */
  readonly prefilters: readonly Prefilter[] | null;
}

interface Plan {
  seen: number;
  /** null until the list is hot, and when it has no group of two or more. */
  groups: readonly ScanGroup[] | null;
}

const plans = new WeakMap<readonly CompiledControl[], Plan>();

/** The groups of a candidate list, or null (not hot yet, or nothing to scan together). */
export function scanGroupsOf(candidates: readonly CompiledControl[]): readonly ScanGroup[] | null {
  if (candidates.length < 2) return null;
  let plan = plans.get(candidates);
  if (plan === undefined) {
    plan = { seen: 0, groups: null };
    plans.set(candidates, plan);
  }
  if (plan.seen < HOT_AFTER && ++plan.seen === HOT_AFTER) plan.groups = buildGroups(candidates);
  return plan.groups;
}

function buildGroups(candidates: readonly CompiledControl[]): readonly ScanGroup[] | null {
  const byPath = new Map<string, { selector: CompiledSelector; patterns: string[]; members: number[]; prefilters: Prefilter[] | null }>();
  candidates.forEach((c, i) => {
    const node = c.node;
    if (node.kind !== NodeKind.Leaf) return;
    const hint = node.check as ScanHint;
    const pattern = hint.scanPattern;
    if (pattern === undefined) return;
    let group = byPath.get(node.selector.path);
    if (!group) byPath.set(node.selector.path, (group = { selector: node.selector, patterns: [], members: [], prefilters: [] }));
    group.patterns.push(pattern);
    group.members.push(i);
    const prefilter = hint.scanPrefilter;
    if (prefilter && group.prefilters) group.prefilters.push(prefilter);
    else group.prefilters = null;
  });
  const groups: ScanGroup[] = [];
  for (const g of byPath.values()) {
    if (g.members.length < 2) continue;
    const set = compilePatternSet(g.patterns);
    if (set) {
      const prefilters = g.prefilters && Object.freeze(mergePrefilters(g.prefilters));
      groups.push({ selector: g.selector, set, members: Object.freeze(g.members), prefilters });
    }
  }
  return groups.length > 0 ? Object.freeze(groups) : null;
}

/**
 * The time at which the previous piece of work finished: scans and controls run back to
 * back, so one clock read ends one piece's time and starts the next one's.
 */
export interface Clock {
  last: number;
}

/** Observability's per-control timing: each member's share of its group's pass. */
export interface ScanTiming {
  /** By candidate position. */
  shares: number[];
  /** Read once per group; left at the end of the last pass. */
  clock: Clock;
}

/**
 * Scans each group once. Returns, by candidate position, 1 for a control known not to
 * match (its group's pass found nothing), else 0. With `timing`, each member's share is
 * set to its part of its group's scan time.
 */
export function clearedByScan(groups: readonly ScanGroup[], size: number, view: StepView, timing?: ScanTiming): Uint8Array {
  const cleared = new Uint8Array(size);
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g]!;
    const members = group.members;
    if (scanFindsNothing(group, view)) for (let k = 0; k < members.length; k++) cleared[members[k]!] = 1;
    if (timing) {
      const end = performance.now();
      const each = (end - timing.clock.last) / members.length;
      timing.clock.last = end;
      for (let k = 0; k < members.length; k++) timing.shares[members[k]!] = each;
    }
  }
  return cleared;
}

function scanFindsNothing(g: ScanGroup, view: StepView): boolean {
  try {
    const value = selectValue(g.selector, view);
    // Nothing selected: the members would not be asked, and do not match.
    if (value === undefined) return true;
    const memo = view.memo;
    const text = memo.text(value);
    if (text === undefined) return true;
    if (g.prefilters !== null && !mayMatchAny(g.prefilters, text, memo)) return true;
    return !g.set.test(memo.utf8(text));
  } catch {
    // Anything unexpected: the members run one by one, as without groups.
    return false;
  }
}
