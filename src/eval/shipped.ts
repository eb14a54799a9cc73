/**
 * The labelled datasets kept in eval/ and the controls they are measured with: what
 * `npm run eval` reports in docs/evaluators.md and what a test holds them to.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createDefaultRegistry } from '../evaluators/registry.js';
import { loadDirectory } from '../gitops/directory.js';
import { inProcessEvaluator } from './in-process.js';
import { readLines } from './read-lines.js';
import { runEval } from './run.js';
import type { EvalReport } from './types.js';

/** A shipped dataset: its file in eval/, the control it measures, and where it came from. */
export interface ShippedDataset {
  file: string;
  control: string;
  evaluator: string;
  source: string;
  licence: string;
}

export const SHIPPED_DATASETS: readonly ShippedDataset[] = [
  {
    file: 'secrets.jsonl',
    control: 'secrets',
    evaluator: 'secrets',
    source: 'gitleaks rule examples (github.com/gitleaks/gitleaks, cmd/generate/config/rules, literal tps/fps)',
    licence: 'MIT',
  },
  {
    file: 'secrets-detect-secrets.jsonl',
    control: 'secrets',
    evaluator: 'secrets',
    source: 'detect-secrets plugin tests (github.com/Yelp/detect-secrets, tests/plugins, literal should_flag tables)',
    licence: 'Apache-2.0',
  },
  {
    file: 'prompt-injection.jsonl',
    control: 'prompt-injection',
    evaluator: 'prompt_injection',
    source: 'LLM Guard prompt-injection scanner tests (github.com/protectai/llm-guard, tests/input_scanners/test_prompt_injection.py)',
    licence: 'MIT',
  },
];

/** Evaluates every shipped dataset of `evalDir` (eval/) with the controls of `evalDir/controls`. */
export async function evaluateShipped(evalDir: string): Promise<Array<{ dataset: ShippedDataset; report: EvalReport }>> {
  const registry = createDefaultRegistry();
  const loaded = await loadDirectory(join(evalDir, 'controls'), registry);
  const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new Error(`${evalDir}/controls: ${errors.map((d) => `${d.file}:${d.line}: ${d.message}`).join('; ')}`);
  const out: Array<{ dataset: ShippedDataset; report: EvalReport }> = [];
  for (const dataset of SHIPPED_DATASETS) {
    const evaluator = inProcessEvaluator({ controls: loaded.controls, agents: [], registry });
    const report = await runEval(readLines(join(evalDir, dataset.file)), evaluator, { dataset: `eval/${dataset.file}` });
    out.push({ dataset, report });
  }
  return out;
}

/** The figures a regression test holds the evaluators to (eval/results.json). */
export interface RecordedFigures {
  [file: string]: { cases: number; precision: number | null; recall: number | null };
}

export async function readRecorded(evalDir: string): Promise<RecordedFigures> {
  return JSON.parse(await readFile(join(evalDir, 'results.json'), 'utf8')) as RecordedFigures;
}
