import { readFile, stat } from 'node:fs/promises';
import type { Command } from 'commander';
import { ApiError, UserError } from '../../src/errors.js';
import { fetchActualState } from '../../src/gitops/fetch-state.js';
import { fingerprintOf } from '../../src/gitops/fingerprint.js';
import { parsePlanFile, planOfFile } from '../../src/gitops/plan-file.js';
import { withPromotionFigures } from '../../src/gitops/promotions.js';
import { applyToServer, planAgainstServer, type ServerPlan } from '../../src/gitops/sync.js';
import { addConnectionOptions, clientOf, connectionOf, explainServerError, formatOption, withServer, type Connection, type ConnectionFlags } from '../options.js';
import { renderApplyJson, renderApplyText, progressPrinter } from '../output/apply.js';
import { withExamples } from '../help.js';
import { colors, shouldColor } from '../output/color.js';
import { loadValidDirectory } from '../output/directory.js';
import { refusalOf } from '../../src/gitops/refusal.js';
import { refusalGroupLines, renderPlanText } from '../output/plan.js';
import { confirm, shouldAsk, type PromptIo } from '../confirm.js';
import { addPlanOptions, planOptionsOf } from './plan.js';
import { APPLY_SPAN, endApplySpan, type ApplyFacts } from '../../src/tracing/operation-spans.js';
import { startCommandSpan } from '../tracing.js';

export interface ApplyCommandOptions extends ConnectionFlags {
  format: 'text' | 'json';
  prune?: boolean;
  force?: boolean;
  owner: string;
  adopt?: string[];
  autoApprove?: boolean;
}

export function registerApply(program: Command): void {
  const command = program
    .command('apply')
    .description('Make the server match the directory (or execute a plan saved with plan --out)')
    .argument('[target]', 'the controls directory or a saved plan file', 'controls')
    .addOption(formatOption(['text', 'json']))
    .option('--auto-approve', 'do not ask before applying (apply asks only when stdin is a terminal and CI is unset)');
  addConnectionOptions(addPlanOptions(command)).action(async (target: string, options: ApplyCommandOptions) => {
    process.exitCode = await runApply(target, options);
  });
  withExamples(command, [
    ['make the server match ./controls (in a terminal it shows the plan and asks first)', 'guardctl apply controls'],
    ['in CI, as the repository, deleting what it no longer defines (no terminal: it does not ask)', 'guardctl apply controls --prune --owner "$GITHUB_REPOSITORY"'],
    ['apply exactly a saved plan', 'guardctl apply plan.json'],
    ['take over the controls a first apply without --owner made', 'guardctl apply controls --owner acme/guards --adopt default --auto-approve'],
  ]);
}

/**
 * `guardctl apply`. With OTEL_EXPORTER_OTLP_* set it is a `guardctl.apply` span (the child
 * of the pipeline's TRACEPARENT), exported before the command returns.
 */
export async function runApply(target: string, options: ApplyCommandOptions, io: PromptIo = { input: process.stdin, output: process.stderr }): Promise<number> {
  const traced = await startCommandSpan(APPLY_SPAN);
  if (!traced) return applyTarget(target, options, io, () => {});
  try {
    let facts: ApplyFacts | null = null;
    const code = await applyTarget(target, options, io, (done) => (facts = done)).catch((error: unknown) => {
      endApplySpan(traced.span, { error: error instanceof Error ? error.message : String(error) });
      throw error;
    });
    endApplySpan(traced.span, facts ?? { error: 'nothing was applied' });
    return code;
  } finally {
    await traced.flush();
  }
}

async function applyTarget(target: string, options: ApplyCommandOptions, io: PromptIo, report: (facts: ApplyFacts) => void): Promise<number> {
  const connection = connectionOf(options);
  const client = clientOf(connection);
  const isFile = await stat(target).then((s) => s.isFile() && !/\.ya?ml$/i.test(target), () => false);
  const serverPlan = isFile ? await savedPlan(target, connection) : await freshPlan(target, options, connection);
  // A saved plan was the reviewed step; a fresh one is shown and confirmed by a person.
  if (!isFile && serverPlan.plan.operations.length > 0 && shouldAsk(options.autoApprove, io)) {
    // The figures of controls promoted from shadow mode are asked for only when a person reads the plan.
    const promotions = await withServer(connection, () => withPromotionFigures(client, serverPlan.promotions));
    const ctx = { directory: target, server: connection.serverUrl, fingerprint: serverPlan.fingerprint, promotions };
    io.output.write(renderPlanText(serverPlan.plan, ctx, colors(shouldColor(io.output as { isTTY?: boolean }))));
    const n = serverPlan.plan.operations.length;
    if (!(await confirm(`\nApply ${n === 1 ? 'this change' : `these ${n} changes`} to ${connection.serverUrl}? Only "yes" applies: `, io))) {
      throw new UserError('apply cancelled: nothing was changed', 'answer "yes" to apply, or pass --auto-approve');
    }
  }
  const c = colors(shouldColor(process.stdout));
  const progress = options.format === 'json' ? undefined : progressPrinter(process.stderr, colors(shouldColor(process.stderr)));
  const result = await withServer(connection, () => applyToServer(client, serverPlan, progress));
  const planned: Record<string, number> = {};
  for (const { op } of serverPlan.plan.operations) planned[op] = (planned[op] ?? 0) + 1;
  report({ target, server: connection.serverUrl, planned, done: result.done.length, failed: result.failed ? 1 : 0, notDone: result.notDone.length });
  // A refused key is not a partial apply to report operation by operation: say what to do.
  const status = result.failed?.status;
  if ((status === 401 || status === 403) && result.done.length === 0) {
    throw explainServerError(new ApiError(status, null, 'PUT', connection.serverUrl), connection);
  }
  process.stdout.write(
    options.format === 'json'
      ? renderApplyJson(result, { server: connection.serverUrl, writes: result.writes })
      : renderApplyText(result, c),
  );
  return result.failed ? 1 : 0;
}

async function freshPlan(dir: string, options: ApplyCommandOptions, connection: Connection): Promise<ServerPlan> {
  const loaded = await loadValidDirectory(dir);
  const result = await withServer(connection, () => planAgainstServer(clientOf(connection), loaded, planOptionsOf(options, dir), { figures: false }));
  const refusal = refusalOf(result.plan, { directory: dir, owner: options.owner, server: connection.explicit ? connection.serverUrl : null });
  if (refusal) {
    // Under `hint: `, each group's lines keep their indentation relative to one another.
    const hint = refusalGroupLines(refusal).map((line) => line.slice(2)).join('\n      ');
    const refused = new UserError(`apply refused: ${refusal.message}; nothing was changed`, hint);
    refused.details = { refusal };
    throw refused;
  }
  return result;
}

/** A saved plan runs only against the exact server state it was made from. */
async function savedPlan(path: string, connection: Connection): Promise<ServerPlan> {
  const parsed = parsePlanFile(await readFile(path, 'utf8'));
  if (!parsed.ok) throw new UserError(`${path}: ${parsed.error}`, 'make a plan file with "guardctl plan --out FILE"');
  const actual = await withServer(connection, () => fetchActualState(clientOf(connection)));
  const now = fingerprintOf(actual);
  if (now !== parsed.file.fingerprint) {
    throw new UserError(
      `the server changed since the plan in ${path} was made (state ${now.slice(0, 19)}…, plan made against ${parsed.file.fingerprint.slice(0, 19)}…); nothing was applied`,
      `make a new plan: guardctl plan ${parsed.file.directory} --out ${path}`,
    );
  }
  return { plan: planOfFile(parsed.file), actual, fingerprint: now, promotions: [] };
}
