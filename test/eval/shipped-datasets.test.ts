// The shipped eval datasets: precision and recall may not fall below the figures recorded
// in eval/results.json (npm run eval records them); a regression of an evaluator fails here.
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { evaluateShipped, readRecorded, SHIPPED_DATASETS } from '../../src/eval/shipped.js';

const EVAL = join(import.meta.dirname, '..', '..', 'eval');

test('every shipped dataset holds its recorded precision and recall', async () => {
  const recorded = await readRecorded(EVAL);
  const results = await evaluateShipped(EVAL);
  expect(results.map((r) => r.dataset.file)).toEqual(SHIPPED_DATASETS.map((d) => d.file));
  for (const { dataset, report } of results) {
    expect(report.diagnostics, dataset.file).toEqual([]);
    const row = report.controls.find((c) => c.name === dataset.control)!;
    const figures = recorded[dataset.file]!;
    expect(row.cases, dataset.file).toBe(figures.cases);
    // Within rounding: the figures are exact ratios of counts, recomputed the same way.
    expect(row.precision ?? 0, `${dataset.file} precision`).toBeGreaterThanOrEqual((figures.precision ?? 0) - 1e-9);
    expect(row.recall ?? 0, `${dataset.file} recall`).toBeGreaterThanOrEqual((figures.recall ?? 0) - 1e-9);
  }
}, 60_000);
