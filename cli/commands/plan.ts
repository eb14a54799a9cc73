import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { UserError } from '../../src/errors.js';
import { planFileOf } from '../../src/gitops/plan-file.js';
import { hasChanges, type PlanOptions } from '../../src/gitops/plan.js';
import { refusalOf } from '../../src/gitops/refusal.js';
import { planAgainstServer } from '../../src/gitops/sync.js';
import { addConnectionOptions, clientOf, connectionOf, formatOption, withServer, type ConnectionFlags } from '../options.js';
import { withExamples } from '../help.js';
import { colors, shouldColor } from '../output/color.js';
import { loadValidDirectory } from '../output/directory.js';
import { renderDiagnosticsText } from '../output/diagnostics.js';
import { renderPlanJson, renderPlanMarkdown, renderPlanText } from '../output/plan.js';
import { renderReplayMarkdown, renderReplayText, replayHeadline } from '../output/replay.js';
import { DEFAULT_REPLAY_LIMIT, replayPlan } from '../../src/replay/index.js';
import { createRegistryFromEnv } from '../../src/evaluators/registry.js';

export interface PlanCommandOptions extends ConnectionFlags {
  format: 'text' | 'json' | 'markdown';
  prune?: boolean;
  force?: boolean;
  owner: string;
  adopt?: string[];
  detailedExitcode?: boolean;
  out?: string;
  /** `true` for the server's recordings, or a JSON-lines file (docs/testing.md). */
  replay?: true | string;
  replayLimit?: string;
}

export function addPlanOptions(command: Command): Command {
  return command
    .option('--prune', 'delete controls this directory owns but no longer defines')
    .option('--force', 'take over controls of the same name that someone else made')
    .option('--owner <id>', 'owner id written to managed_by as gitops:<id>', parseOwner, 'default')
    .option('--adopt <id>', 'take over the controls of the same name owned by gitops:<id> (repeatable), e.g. --adopt default after a first apply without --owner', collectOwner, []);
}

function collectOwner(value: string, previous: string[]): string[] {
  return [...previous, parseOwner(value)];
}

/** Plan options from the flags plan and apply share. */
export function planOptionsOf(options: Pick<PlanCommandOptions, 'prune' | 'force' | 'owner' | 'adopt'>, directory?: string): PlanOptions {
  const base = { prune: Boolean(options.prune), force: Boolean(options.force), owner: options.owner, adopt: options.adopt ?? [] };
  return directory === undefined ? base : { ...base, directory };
}

/** Owner ids end up in managed_by and in messages: keep them short and printable. */
export function parseOwner(value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,199}$/.test(value)) {
    throw new UserError(`--owner "${value}" is not a valid owner id`, 'use letters, digits and . _ / : @ - (for example the repository name)');
  }
  return value;
}

export function registerPlan(program: Command): void {
  const command = program
    .command('plan')
    .description('Show what apply would change on the server')
    .argument('[dir]', 'the controls directory', 'controls')
    .addOption(formatOption(['text', 'json', 'markdown']))
    .option('--detailed-exitcode', 'exit 0 for no changes, 2 for changes, 1 for errors')
    .option('--out <file>', 'save the plan (with a fingerprint of the server state) for "guardctl apply <file>"')
    .option('--replay [source]', 're-evaluate recorded steps (the server\'s recordings, or a JSON-lines file) and show how decisions change')
    .option('--replay-limit <n>', `steps to replay at most (default ${DEFAULT_REPLAY_LIMIT})`);
  addConnectionOptions(addPlanOptions(command)).action(async (dir: string, options: PlanCommandOptions) => {
    process.exitCode = await runPlan(dir, options);
  });
  withExamples(command, [
    ['what apply would change: + create, ~ update (field by field), - delete', 'guardctl plan controls'],
    ['a pull-request comment', 'guardctl plan controls --format markdown > plan.md'],
    ['in CI: exit 0 no changes, 2 changes, 1 an error or a plan apply would refuse', 'guardctl plan controls --owner "$GITHUB_REPOSITORY" --detailed-exitcode'],
    ['save it for "guardctl apply plan.json" (refused if the server changes meanwhile)', 'guardctl plan controls --out plan.json'],
    ["what the change would have done to the server's recorded steps", 'guardctl plan controls --replay'],
  ]);
}

export async function runPlan(dir: string, options: PlanCommandOptions): Promise<number> {
  const loaded = await loadValidDirectory(dir);
  // A pin that leaves fields unchecked, or holds text a reader cannot see, is said where pins are reviewed, as validate says it (stderr: the plan's formats stay as they are).
  const outdated = loaded.diagnostics.filter((d) => d.code === 'pin_outdated' || d.code === 'hidden_text');
  if (outdated.length > 0) process.stderr.write(renderDiagnosticsText(outdated, new Map(loaded.files.map((f) => [f.path, f.text])), colors(shouldColor(process.stderr))));
  const connection = connectionOf(options);
  const client = clientOf(connection);
  const result = await withServer(connection, () => planAgainstServer(client, loaded, planOptionsOf(options, dir)));
  const refusal = refusalOf(result.plan, { directory: dir, owner: options.owner, server: connection.explicit ? connection.serverUrl : null });
  const ctx = { directory: dir, server: connection.serverUrl, fingerprint: result.fingerprint, refusal, promotions: result.promotions };
  // A saved plan is applied as it is: one that leaves conflicts out must not be saved.
  if (options.out && !refusal) {
    const file = planFileOf(result.plan, { server: connection.serverUrl, fingerprint: result.fingerprint, directory: dir });
    await writeFile(resolve(options.out), `${JSON.stringify(file, null, 2)}\n`);
  }
  const replayed = options.replay === undefined ? null : await withServer(connection, async () =>
    replayPlan({ client, registry: await createRegistryFromEnv(process.env), loaded, actual: result.actual, source: options.replay!, limit: replayLimitOf(options.replayLimit) }),
  );
  let out =
    options.format === 'json'
      ? renderPlanJson(result.plan, ctx)
      : options.format === 'markdown'
        ? renderPlanMarkdown(result.plan, ctx)
        : renderPlanText(result.plan, ctx, colors(shouldColor(process.stdout)));
  if (replayed) {
    out =
      options.format === 'json'
        ? `${JSON.stringify({ ...(JSON.parse(out) as object), replay: { ...replayed, headline: replayHeadline(replayed) } }, null, 2)}\n`
        : options.format === 'markdown'
          ? `${out.trimEnd()}\n${renderReplayMarkdown(replayed)}`
          : `${out}${renderReplayText(replayed, colors(shouldColor(process.stdout)))}`;
  }
  process.stdout.write(out);
  if (refusal) {
    // The plan above says why and how to adopt; this line is for logs that keep stderr only.
    const n = result.plan.conflicts.length;
    // Only some conflicts have a command that takes them over (none for a watched directory).
    const next = refusal.groups.some((g) => g.command !== null) ? 'the command that takes them over' : 'what to do instead';
    process.stderr.write(`error: apply would refuse this plan: ${n} conflict${n === 1 ? '' : 's'} (the plan above says why and ${next})${options.out ? `; nothing was saved to ${options.out}` : ''}\n`);
    return 1;
  }
  if (options.out && options.format === 'text') process.stdout.write(`Saved the plan to ${options.out}; run "guardctl apply ${options.out}" to apply exactly this.\n`);
  return options.detailedExitcode && hasChanges(result.plan) ? 2 : 0;
}

/** --replay-limit: a whole number of steps, at least 1. */
export function replayLimitOf(text: string | undefined): number {
  if (text === undefined) return DEFAULT_REPLAY_LIMIT;
  if (!/^\d+$/.test(text.trim()) || Number(text) < 1) throw new UserError(`--replay-limit "${text}" is not a whole number of steps`, 'for example --replay-limit 10000');
  return Number(text);
}
