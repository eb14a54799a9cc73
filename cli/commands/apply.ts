import { readFile, stat } from 'node:fs/promises';
import type { Command } from 'commander';
import { ApiError, UserError } from '../../src/errors.js';
import { fetchActualState } from '../../src/gitops/fetch-state.js';
import { fingerprintOf } from '../../src/gitops/fingerprint.js';
import { parsePlanFile, planOfFile } from '../../src/gitops/plan-file.js';
import { applyToServer, planAgainstServer, type ServerPlan } from '../../src/gitops/sync.js';
import { addConnectionOptions, clientOf, connectionOf, explainServerError, formatOption, withServer, type Connection, type ConnectionFlags } from '../options.js';
import { renderApplyJson, renderApplyText, progressPrinter } from '../output/apply.js';
import { colors, shouldColor } from '../output/color.js';
import { loadValidDirectory } from '../output/directory.js';
import { addPlanOptions } from './plan.js';

export interface ApplyCommandOptions extends ConnectionFlags {
  format: 'text' | 'json';
  prune?: boolean;
  force?: boolean;
  owner: string;
}

export function registerApply(program: Command): void {
  const command = program
    .command('apply')
    .description('Make the server match the directory (or execute a plan saved with plan --out)')
    .argument('[target]', 'the controls directory or a saved plan file', 'controls')
    .addOption(formatOption(['text', 'json']));
  addConnectionOptions(addPlanOptions(command)).action(async (target: string, options: ApplyCommandOptions) => {
    process.exitCode = await runApply(target, options);
  });
}

export async function runApply(target: string, options: ApplyCommandOptions): Promise<number> {
  const connection = connectionOf(options);
  const client = clientOf(connection);
  const isFile = await stat(target).then((s) => s.isFile() && !/\.ya?ml$/i.test(target), () => false);
  const serverPlan = isFile ? await savedPlan(target, connection) : await freshPlan(target, options, connection);
  const c = colors(shouldColor(process.stdout));
  const progress = options.format === 'json' ? undefined : progressPrinter(process.stderr, colors(shouldColor(process.stderr)));
  const result = await withServer(connection, () => applyToServer(client, serverPlan, progress));
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
  const loaded = await loadValidDirectory(dir, options.format);
  const result = await withServer(connection, () =>
    planAgainstServer(clientOf(connection), loaded, { prune: Boolean(options.prune), force: Boolean(options.force), owner: options.owner }, { figures: false }),
  );
  if (result.plan.conflicts.length > 0) {
    const names = result.plan.conflicts.map((c) => `"${c.name}" (${c.managed_by ?? 'made by hand'})`).join(', ');
    throw new UserError(
      `${result.plan.conflicts.length} control(s) of the same name exist on the server and are not owned by ${result.plan.managed_by}: ${names}; nothing was changed`,
      'rename them in the directory, or run again with --force to take them over',
    );
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
