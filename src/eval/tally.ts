/**
 * Per-control confusion counts, gathered case by case in bounded memory: counts, a duration
 * histogram, and the first LIST_MAX misses and false positives by id. PURE.
 */
import { DurationHistogram } from './histogram.js';
import type { CaseNote, ControlScore, GateFailure, Gates } from './types.js';

/** Misses and false positives listed per control at most; the totals count all. */
export const LIST_MAX = 25;

/** The row of the step's decision against expect.decision. */
export const DECISION_ROW = 'decision';

class Row {
  tp = 0;
  fp = 0;
  tn = 0;
  fn = 0;
  errors = 0;
  readonly times = new DurationHistogram();
  readonly misses: CaseNote[] = [];
  readonly falsePositives: CaseNote[] = [];
  missesTotal = 0;
  falsePositivesTotal = 0;

  constructor(
    readonly name: string,
    readonly kind: 'control' | 'decision',
  ) {}
}

export class Tally {
  readonly #rows = new Map<string, Row>();

  #row(name: string, kind: 'control' | 'decision'): Row {
    let row = this.#rows.get(name);
    if (row === undefined) this.#rows.set(name, (row = new Row(name, kind)));
    return row;
  }

  /** One labelled outcome; `note` is built only when the case is listed (a miss or false positive). */
  score(name: string, expected: boolean, actual: boolean, note: () => CaseNote, kind: 'control' | 'decision' = 'control'): void {
    const row = this.#row(name, kind);
    if (expected && actual) row.tp++;
    else if (!expected && !actual) row.tn++;
    else if (expected) {
      row.fn++;
      if (row.missesTotal++ < LIST_MAX) row.misses.push(note());
    } else {
      row.fp++;
      if (row.falsePositivesTotal++ < LIST_MAX) row.falsePositives.push(note());
    }
  }

  error(name: string): void {
    this.#row(name, 'control').errors++;
  }

  time(name: string, ms: number): void {
    this.#row(name, 'control').times.add(ms);
  }

  /** Rows with at least one labelled case, controls by name, then the decision row. */
  scores(): ControlScore[] {
    const rows = [...this.#rows.values()].filter((r) => r.tp + r.fp + r.tn + r.fn > 0);
    rows.sort((a, b) => (a.kind === b.kind ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.kind === 'decision' ? 1 : -1));
    return rows.map(scoreOf);
  }
}

function scoreOf(r: Row): ControlScore {
  const precision = r.tp + r.fp === 0 ? null : r.tp / (r.tp + r.fp);
  const recall = r.tp + r.fn === 0 ? null : r.tp / (r.tp + r.fn);
  const f1 = precision === null || recall === null ? null : precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return {
    name: r.name,
    kind: r.kind,
    cases: r.tp + r.fp + r.tn + r.fn,
    tp: r.tp,
    fp: r.fp,
    tn: r.tn,
    fn: r.fn,
    errors: r.errors,
    precision,
    recall,
    f1,
    p50_ms: r.times.quantile(0.5),
    p95_ms: r.times.quantile(0.95),
    misses: r.misses,
    false_positives: r.falsePositives,
    misses_total: r.missesTotal,
    false_positives_total: r.falsePositivesTotal,
  };
}

/** Every row below a gate; an undefined precision or recall (nothing to measure) holds. */
export function gateFailures(scores: readonly ControlScore[], gates: Gates): GateFailure[] {
  const failures: GateFailure[] = [];
  for (const s of scores) {
    if (gates.minPrecision !== undefined && s.precision !== null && s.precision < gates.minPrecision) {
      failures.push({ name: s.name, metric: 'precision', value: s.precision, min: gates.minPrecision });
    }
    if (gates.minRecall !== undefined && s.recall !== null && s.recall < gates.minRecall) {
      failures.push({ name: s.name, metric: 'recall', value: s.recall, min: gates.minRecall });
    }
  }
  return failures;
}
