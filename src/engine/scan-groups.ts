/**
 * Controls that read the same field of a step are scanned together. Most steps match none
 * of them, and a scan settles that for all of them at once:
 * - the literals the members declare (a regex's required literals, a list's entries) are
 *   searched for once each, and a text holding none of them matches no member;
 * - otherwise one RE2::Set pass over the text tells which regex members' patterns occur in
 *   it: the members whose pattern it did not find match nothing.
 * Members a scan rules out are plain non-matches without running one by one; the others run
 * their own check as usual, so what a match says (and everything about errors) stays
 * exactly what the evaluator says.
 *
 * A set costs native memory, so a candidate list gets its groups only once it has been
 * evaluated HOT_AFTER times: hot lists (the agent steps a server sees all day) scan in
 * one pass, and the long tail of rarely seen ones costs nothing extra.
 */
import type { ScanHint } from '../evaluators/types.js';
import { mayMatchAny, mergePrefilters, type Prefilter } from '../evaluators/regex/literals.js';
import { compilePatternSet, OFFLOAD_MIN_BYTES, type CompiledPatternSet } from '../evaluators/regex/re2.js';
import { NodeKind, type CompiledControl } from './build-control.js';
import { countsAsMissing, selectValue, type CompiledSelector, type StepView } from './select.js';
// Imported rather than the global: see evaluate.ts.
import { performance } from 'node:perf_hooks';

/** Evaluations of a candidate list before its groups are built. */
export const HOT_AFTER = 64;

export interface ScanGroup {
  readonly selector: CompiledSelector;
  /** Positions in the candidate list of every member. */
  readonly members: readonly number[];
  /**
   * The members' literals, merged (at most one folded and one exact set), when every
   * member declares some: a text that holds none of them matches no member. Null otherwise.
   */
  readonly prefilters: readonly Prefilter[] | null;
  /** The regex members' patterns as one set (two or more of them), else null. */
  readonly set: CompiledPatternSet | null;
  /** The regex members, in the set's pattern order: the set rules out those whose pattern it does not find. */
  readonly setMembers: readonly number[];
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

interface Draft {
  selector: CompiledSelector;
  members: number[];
  /** Every member's literals; null once a member declares none. */
  prefilters: Prefilter[] | null;
  patterns: string[];
  patternMembers: number[];
}

function buildGroups(candidates: readonly CompiledControl[]): readonly ScanGroup[] | null {
  const byPath = new Map<string, Draft>();
  candidates.forEach((c, i) => {
    const node = c.node;
    if (node.kind !== NodeKind.Leaf) return;
    const hint = node.check as ScanHint;
    const pattern = hint.scanPattern;
    const prefilter = hint.scanPrefilter ?? null;
    if (pattern === undefined && prefilter === null) return;
    let draft = byPath.get(node.selector.path);
    if (!draft) {
      draft = { selector: node.selector, members: [], prefilters: [], patterns: [], patternMembers: [] };
      byPath.set(node.selector.path, draft);
    }
    draft.members.push(i);
    if (prefilter !== null && draft.prefilters) draft.prefilters.push(prefilter);
    else draft.prefilters = null;
    if (pattern !== undefined) {
      draft.patterns.push(pattern);
      draft.patternMembers.push(i);
    }
  });
  // Readonly by type, not frozen: see HOT_ARRAYS in evaluate.ts.
  const groups: ScanGroup[] = [];
  for (const d of byPath.values()) {
    const set = d.patterns.length >= 2 ? (compilePatternSet(d.patterns) ?? null) : null;
    // Without shared literals only the set can rule members out, and only its own.
    const members = d.prefilters ? d.members : set ? d.patternMembers : [];
    if (members.length < 2) continue;
    groups.push(
      Object.freeze({
        selector: d.selector,
        members,
        prefilters: d.prefilters && mergePrefilters(d.prefilters),
        set,
        setMembers: set ? d.patternMembers : [],
      }),
    );
  }
  return groups.length > 0 ? groups : null;
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

/** clearedByScan's marks: not ruled out, ruled out, ruled out because the field is not there. */
export const NOT_CLEARED = 0;
export const CLEARED = 1;
export const CLEARED_MISSING = 2;

/**
 * Scans each group once. Returns, by candidate position, CLEARED for a control known not to
 * match (a scan of its group ruled it out), CLEARED_MISSING when that is because its
 * selector found nothing, else NOT_CLEARED. With `timing`, the time of each group's
 * scan is shared equally by the members it ruled out; the others are timed when they run,
 * and a scan that rules out none is charged to no control.
 */
export function clearedByScan(groups: readonly ScanGroup[], size: number, view: StepView, timing?: ScanTiming): Uint8Array {
  const cleared = new Uint8Array(size);
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g]!;
    const ruledOut = ruledOutBy(group, view);
    if (ruledOut !== null) {
      const mark = ruledOut === MISSING ? missingMark(group, view) : CLEARED;
      const members = ruledOut === MISSING ? group.members : ruledOut;
      for (let k = 0; k < members.length; k++) cleared[members[k]!] = mark;
    }
    if (timing) {
      const end = performance.now();
      if (ruledOut !== null) {
        const members = ruledOut === MISSING ? group.members : ruledOut;
        const each = (end - timing.clock.last) / members.length;
        for (let k = 0; k < members.length; k++) timing.shares[members[k]!] = each;
      }
      timing.clock.last = end;
    }
  }
  return cleared;
}

/** ruledOutBy's answer when the group's field is not in the step. */
const MISSING: readonly number[] = [];

function missingMark(g: ScanGroup, view: StepView): number {
  return countsAsMissing(g.selector, view) ? CLEARED_MISSING : CLEARED;
}

/** The members the group's scan rules out (MISSING: all, as their field is not there), or null when it rules out none. */
function ruledOutBy(g: ScanGroup, view: StepView): readonly number[] | null {
  try {
    const value = selectValue(g.selector, view);
    // Nothing selected: the members would not be asked, and do not match.
    if (value === undefined) return MISSING;
    const memo = view.memo;
    const text = memo.text(value);
    if (text === undefined) return g.members;
    // A long text is left to the members, which search it off the event loop.
    if (text.length >= OFFLOAD_MIN_BYTES) return null;
    if (g.prefilters !== null && !mayMatchAny(g.prefilters, text, memo)) return g.members;
    if (g.set === null) return null;
    // Which of the set's patterns occur: the members of the others are ruled out, and only
    // those whose pattern the pass found run their own search.
    const found = g.set.match(memo.utf8(text));
    if (found.length === 0) return g.setMembers;
    if (found.length === g.setMembers.length) return null;
    return g.setMembers.filter((_, k) => !found.includes(k));
  } catch {
    // Anything unexpected: the members run one by one, as without groups.
    return null;
  }
}
