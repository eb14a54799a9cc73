/**
 * Counts of a step that asked a person, and counters for that step submitted again on its
 * approval (docs/approvals.md). The question's counts are noted (`noteCounts`) and kept with
 * its approval; the approved submission adds only what it counts beyond them, so `repeat
 * {max: 1}` does not take the approved step for its own repeat, nor a budget spend its
 * amount twice. What the question did not count (another session's repeat, another key or
 * a larger amount read from the step's context, which the approval is not bound to, a
 * control linked since) is counted as any step's count is, and so is what the counters no
 * longer hold of it (slid out of its window, lost to a restart). A budget that asked a person
 * because the step was over it is spent by the approved step all the same: the person let
 * it go over, so the next step is over too and asks again.
 */
import type { Counters, CountRequest, HeldCount } from './types.js';

/**
 * What one count added: its counter, its key and the amount, its window, and the counters'
 * clock once it was counted (to tell whether the count is still in the window later).
 */
export type CountedStep = readonly [counter: string, key: string, amount: number, window_ms: number, at: number];

/** Whether the counters still hold a count (server-counters.ts): in its window, neither reset nor lost. */
export type HoldsCount = (count: HeldCount) => boolean;

/** Counters that note what each count added (a refused budget adds nothing), read on the counters' clock `now`. */
export function noteCounts(counters: Counters, now: () => number): { counters: Counters; counted: CountedStep[] } {
  const counted: CountedStep[] = [];
  // The time is read once the count is made: a key the count created began before it.
  const note = (request: CountRequest, over: boolean): void => {
    if (request.always || !over) counted.push([request.counter, request.key, request.amount, request.window_ms, now()]);
  };
  return {
    counted,
    counters: {
      count(request) {
        const answer = counters.count(request);
        if (answer instanceof Promise) {
          return answer.then((a) => {
            note(request, a.over);
            return a;
          });
        }
        note(request, answer.over);
        return answer;
      },
    },
  };
}

/**
 * Counters for the approved step: each of its question's counts that the counters still
 * hold (`holds`: the same window, not yet slid out of it, not lost to a restart or a
 * reset) is taken off the same counter and key once. A question's count they no longer
 * hold is no count of the window the step runs in, so the step is counted in full: the
 * payment approved an hour after it asked is the payment of this hour. The budgets of
 * `asking` controls (ids) add the amount even over their max.
 */
export function countedAlready(counters: Counters, counted: readonly CountedStep[], asking: ReadonlySet<number>, holds: HoldsCount): Counters {
  const left = [...counted];
  return {
    count(request) {
      const always = request.always || asking.has(request.control_id);
      const i = left.findIndex(
        ([counter, key, , windowMs, at]) =>
          counter === request.counter && key === request.key && windowMs === request.window_ms && holds({ counter, key, window_ms: windowMs, at }),
      );
      if (i < 0) return counters.count(always === request.always ? request : { ...request, always });
      const [[, , before]] = left.splice(i, 1) as [CountedStep];
      return counters.count({ ...request, always, amount: Math.max(0, request.amount - before) });
    },
  };
}

/** The noted counts as stored with an approval (JSON text), and back; anything else reads as none. */
export function countedText(counted: readonly CountedStep[]): string {
  return JSON.stringify(counted);
}

/**
 * Counts of older rows (counter, key and amount, without window or time) read as none:
 * the approved step is then counted in full, never let through on a count nobody can
 * place in a window.
 */
export function countedOf(text: string | null | undefined): CountedStep[] {
  if (typeof text !== 'string') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  return parsed.filter(
    (c): c is CountedStep =>
      Array.isArray(c) &&
      c.length === 5 &&
      typeof c[0] === 'string' &&
      typeof c[1] === 'string' &&
      [c[2], c[3], c[4]].every((n) => typeof n === 'number' && Number.isFinite(n)),
  );
}
