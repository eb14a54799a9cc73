import { access } from 'node:fs/promises';
import type { Command } from 'commander';
import { UserError } from '../../src/errors.js';
import { inProcessEvaluator, readLines, runEval, serverEvaluator, type CaseEvaluator, type EvalReport } from '../../src/eval/index.js';
import { createRegistryFromEnv } from '../../src/evaluators/registry.js';
import { withExamples } from '../help.js';
import { addConnectionOptions, clientOf, connectionOf, formatOption, withServer, type ConnectionFlags } from '../options.js';
import { colors, shouldColor } from '../output/color.js';
import { loadValidDirectory } from '../output/directory.js';
import { renderEvalJson, renderEvalMarkdown, renderEvalText } from '../output/eval.js';

export type EvalFormat = 'text' | 'json' | 'markdown';

export interface EvalCommandOptions extends ConnectionFlags {
  format: EvalFormat;
  minPrecision?: string;
  minRecall?: string;
  agent?: string;
}

export function registerEval(program: Command): void {
  const command = program
    .command('eval')
    .description('Precision, recall and time per check of each control on a labelled dataset (JSON Lines)')
    .argument('<dataset>', 'the labelled cases, one JSON object a line (- for standard input)')
    .argument('[dir]', 'the controls directory (in-process evaluation)', 'controls')
    .addOption(formatOption(['text', 'json', 'markdown']))
    .option('--min-precision <ratio>', 'exit 1 when a control\'s precision is below this (0..1)')
    .option('--min-recall <ratio>', 'exit 1 when a control\'s recall is below this (0..1)')
    .option('--agent <name>', 'the agent of lines that name none');
  addConnectionOptions(command).action(async (dataset: string, dir: string, options: EvalCommandOptions) => {
    process.exitCode = await runEvalCommand(dataset, dir, options);
  });
  withExamples(command, [
    ['how well the controls of ./controls do on a labelled set', 'guardctl eval eval/secrets.jsonl controls'],
    ['a CI gate: exit 1 when any control falls below 95 % precision or 90 % recall', 'guardctl eval cases.jsonl --min-precision 0.95 --min-recall 0.9'],
    ['a pull-request comment', 'guardctl eval cases.jsonl --format markdown > eval.md'],
    ["through a running server, as an agent's steps", 'guardctl eval cases.jsonl --server http://127.0.0.1:8000 --agent support-bot'],
  ]);
}

/** `--min-precision 0.9`: a ratio from 0 to 1, checked before anything runs. */
export function parseRatio(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) {
    throw new UserError(`${flag} "${text}" is not a ratio from 0 to 1`, `for example ${flag} 0.95`);
  }
  return n;
}

/** Exit code: 0 when every line was evaluated and every gate held, 1 otherwise. */
export async function runEvalCommand(dataset: string, dir: string, options: EvalCommandOptions, write: (text: string) => void = (t) => process.stdout.write(t)): Promise<number> {
  const gates = { minPrecision: parseRatio('--min-precision', options.minPrecision), minRecall: parseRatio('--min-recall', options.minRecall) };
  if (dataset !== '-') {
    await access(dataset).catch(() => {
      throw new UserError(`cannot read the dataset ${dataset}`, 'pass a JSON Lines file of labelled cases (docs/eval.md shows the format)');
    });
  }
  let report: EvalReport;
  if (options.server !== undefined) {
    const connection = connectionOf(options);
    const client = clientOf(connection);
    report = await withServer(connection, async () => {
      const evaluator = await serverEvaluator(client, connection.serverUrl, options.agent);
      return runEval(readLines(dataset), evaluator, { dataset, gates });
    });
  } else {
    const evaluator = await localEvaluator(dir, options.agent);
    report = await runEval(readLines(dataset), evaluator, { dataset, gates });
  }
  write(renderEval(report, options.format));
  return report.passed ? 0 : 1;
}

async function localEvaluator(dir: string, agent: string | undefined): Promise<CaseEvaluator> {
  const loaded = await loadValidDirectory(dir);
  const registry = await createRegistryFromEnv(process.env);
  return inProcessEvaluator({ controls: loaded.controls, agents: loaded.agents, registry, defaultAgent: agent });
}

export function renderEval(report: EvalReport, format: EvalFormat): string {
  switch (format) {
    case 'json':
      return renderEvalJson(report);
    case 'markdown':
      return renderEvalMarkdown(report);
    case 'text':
      return renderEvalText(report, colors(shouldColor(process.stdout)));
  }
}
