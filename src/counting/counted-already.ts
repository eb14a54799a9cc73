/**
 * Counts of a step that asked a person, and counters for that step submitted again on its
 * approval (docs/approvals.md). The question's counts are noted (`noteCounts`) and kept with
 * its approval; the approved submission adds only what it counts beyond them, so `repeat
 * {max: 1}` does not take the approved step for its own repeat, nor a budget spend its
 * amount twice. What the question did not count (another session's repeat, another key or
 * a larger amount read from the step's context, which the approval is not bound to, a
 * control linked since) is counted as any step's count is, and so is what the counters no
 * longer hold of it (slid out of its window, lost to a restart).
 *
 * A counting control that asks (a budget or rate with `decision: ask`) asked the person
 * about the step as it was then: over its max by the question's amount, or not over at
 * all. The approved step is spent all the same up to that amount (the person let it go
 * over, so the next step is over too and asks again); what it adds beyond the question's
 * count over the max (a larger amount, a key the question was not over on) is a question
 * the person was never asked (`uncovered`).
 */
import type { ClockedCounters, Counters, CountRequest } from './types.js';

/** What one count of a step did, as its question's approval keeps it. */
export interface CountedStep {
  readonly counter: string;
  readonly key: string;
  readonly window_ms: number;
  /** The counters' clock once it was counted (whether it is still in the window later). */
  readonly at: number;
  /** The step's amount. */
  readonly amount: number;
  /** What the counter holds of it: the amount, or 0 when a budget refused it. */
  readonly added: number;
  /** Whether the count was over the max: the person was asked about the step over it. */
  readonly over: boolean;
}


/** Counters that note what each count did, read on the counters' clock `now`. */
export function noteCounts(counters: ClockedCounters): { counters: Counters; counted: CountedStep[] } {
  const counted: CountedStep[] = [];
  return { counted, counters: noting(counters, counted, (request) => request.amount) };
}

/**
 * `counters` noting each count into `counted`, the step's amount being `amountOf(request)`.
 * The time is read once the count is answered: a key the count created began before it.
 */
function noting(counters: ClockedCounters, counted: CountedStep[], amountOf: (request: CountRequest) => number): Counters {
  const note = (request: CountRequest, over: boolean): void => {
    const added = request.always || !over ? request.amount : 0;
    counted.push({ counter: request.counter, key: request.key, window_ms: request.window_ms, at: counters.now(), amount: amountOf(request), added, over });
  };
  return {
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
  };
}

/** Counters for an approved step, what they counted (kept with a new question), and the ask controls its question did not cover. */
export interface ApprovedCounting {
  counters: Counters;
  counted: CountedStep[];
  /** Ids of asking controls whose count of this step is over where its question's was not (or by more). */
  uncovered: ReadonlySet<number>;
}

/**
 * Counters for the approved step. Each of its question's counts that the counters still
 * hold (`holds`: the same window, not yet slid out of it, not lost to a restart or a
 * reset) is taken off the same counter and key once: a count they no longer hold is no
 * count of the window the step runs in, so the step is counted in full. The counts of
 * `asking` controls (ids) are added even over their max where the question was over them
 * by at least this amount; anywhere else such a count over its max is `uncovered`.
 */
export function countedAlready(counters: ClockedCounters, question: readonly CountedStep[], asking: ReadonlySet<number>): ApprovedCounting {
  const left = [...question];
  const counted: CountedStep[] = [];
  const uncovered = new Set<number>();
  const amounts = new WeakMap<CountRequest, number>();
  const inner = noting(counters, counted, (request) => amounts.get(request) ?? request.amount);
  return {
    counted,
    uncovered,
    counters: {
      count(request) {
        const i = left.findIndex((c) => c.counter === request.counter && c.key === request.key && c.window_ms === request.window_ms);
        const asked = i < 0 ? undefined : (left.splice(i, 1)[0] as CountedStep);
        if (asked === undefined || asked.added <= 0) return countAfter(request, asked, false);
        const held = counters.holds(asked);
        return held instanceof Promise ? held.then((h) => countAfter(request, asked, h)) : countAfter(request, asked, held);
      },
    },
  };

  /** Counts `request` less what its question's count `asked` added, where the counters still hold it (`held`). */
  function countAfter(request: CountRequest, asked: CountedStep | undefined, held: boolean): ReturnType<Counters['count']> {
    const amount = held && asked !== undefined ? Math.max(0, request.amount - asked.added) : request.amount;
    const isAsking = asking.has(request.control_id);
    // The person saw the step over this counter, at this amount or more: they let it go over.
    const seenOver = isAsking && asked !== undefined && asked.over && request.amount <= asked.amount;
    const counting = { ...request, amount, always: request.always || seenOver };
    amounts.set(counting, request.amount);
    const answer = inner.count(counting);
    // Over by nothing beyond the question's count (others spent since) is the question's own count, within the max it was.
    const check = (a: { over: boolean }): void => {
      if (isAsking && a.over && !seenOver && amount > 0) uncovered.add(request.control_id);
    };
    if (answer instanceof Promise) {
      return answer.then((a) => {
        check(a);
        return a;
      });
    }
    check(answer);
    return answer;
  }
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
  return parsed.filter((c): c is CountedStep => {
    if (typeof c !== 'object' || c === null || Array.isArray(c)) return false;
    const { counter, key, window_ms, at, amount, added, over } = c as Record<string, unknown>;
    const finite = (n: unknown) => typeof n === 'number' && Number.isFinite(n);
    return typeof counter === 'string' && typeof key === 'string' && [window_ms, at, amount, added].every(finite) && typeof over === 'boolean';
  });
}
