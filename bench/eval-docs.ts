/**
 * `npm run eval`: measures every shipped dataset (eval/) with the controls of eval/controls,
 * writes the figures to eval/results.json (what test/eval/shipped-datasets.test.ts holds
 * the evaluators to) and rewrites the measured section of docs/evaluators.md.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { evaluateShipped, type RecordedFigures } from '../src/eval/shipped.js';

const BEGIN = '<!-- eval:begin (npm run eval writes this section) -->';
const END = '<!-- eval:end -->';

const ratio = (n: number | null) => (n === null ? '–' : n.toFixed(3));

async function main(): Promise<void> {
  const root = process.cwd();
  const results = await evaluateShipped(join(root, 'eval'));
  const recorded: RecordedFigures = {};
  const rows = ['| evaluator | corpus (source, licence) | cases (positive) | size | precision | recall | F1 |', '|---|---|---|---|---|---|---|'];
  for (const { dataset, report } of results) {
    if (report.diagnostics.length > 0) throw new Error(`${dataset.file}: ${report.diagnostics.length} bad line(s), first: ${report.diagnostics[0]!.message}`);
    const row = report.controls.find((c) => c.name === dataset.control);
    if (row === undefined) throw new Error(`${dataset.file}: no case scores control ${dataset.control}`);
    recorded[dataset.file] = { cases: row.cases, precision: row.precision, recall: row.recall };
    const kb = Math.round(statSync(join(root, 'eval', dataset.file)).size / 1024);
    rows.push(`| \`${dataset.evaluator}\` | ${dataset.source}, ${dataset.licence} | ${row.cases} (${row.tp + row.fn}) | ${kb} KB | ${ratio(row.precision)} | ${ratio(row.recall)} | ${ratio(row.f1)} |`);
  }
  writeFileSync(join(root, 'eval', 'results.json'), `${JSON.stringify(recorded, null, 2)}\n`);
  const docPath = join(root, 'docs', 'evaluators.md');
  const doc = readFileSync(docPath, 'utf8');
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (start < 0 || end < start) throw new Error(`docs/evaluators.md lacks the markers ${BEGIN} … ${END}`);
  writeFileSync(docPath, `${doc.slice(0, start + BEGIN.length)}\n${rows.join('\n')}\n${doc.slice(end)}`);
  process.stdout.write(`${rows.join('\n')}\n`);
}

await main();
