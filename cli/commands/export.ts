import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { UserError } from '../../src/errors.js';
import { exportState } from '../../src/gitops/export.js';
import { fetchActualState } from '../../src/gitops/fetch-state.js';
import { schemaLineFor } from '../../src/gitops/schema-location.js';
import { withExamples } from '../help.js';
import { addConnectionOptions, clientOf, connectionOf, formatOption, withServer, type ConnectionFlags } from '../options.js';

export interface ExportOptions extends ConnectionFlags {
  format: 'text' | 'json';
  overwrite?: boolean;
}

export function registerExport(program: Command): void {
  const command = program
    .command('export')
    .description("Write the server's controls and links as YAML files (one per control, plus agents.yaml)")
    .argument('[dir]', 'where to write the files', 'controls')
    .addOption(formatOption(['text', 'json']))
    .option('--overwrite', 'write into a directory that already holds YAML files');
  addConnectionOptions(command).action(async (dir: string, options: ExportOptions) => {
    process.exitCode = await runExport(dir, options);
  });
  withExamples(command, [
    ["write the server's controls and links into ./exported (then plan exported shows no changes)", 'guardctl export exported'],
    ['refresh a directory that already holds YAML files', 'guardctl export controls --overwrite'],
  ]);
}

export async function runExport(dir: string, options: ExportOptions): Promise<number> {
  const connection = connectionOf(options);
  const existing = await readdir(dir).catch(() => [] as string[]);
  if (!options.overwrite && existing.some((name) => /\.ya?ml$/i.test(name))) {
    throw new UserError(
      `${dir} already holds YAML files; exporting there could mix two versions of a control`,
      'export to an empty directory, or pass --overwrite',
    );
  }
  const state = await withServer(connection, () => fetchActualState(clientOf(connection)));
  const result = exportState(state, await schemaLineFor(dir, connection.serverUrl));
  await mkdir(dir, { recursive: true });
  for (const file of result.files) await writeFile(join(dir, file.path), file.text);
  const controls = result.files.filter((f) => f.path !== 'agents.yaml').length;
  if (options.format === 'json') {
    process.stdout.write(
      `${JSON.stringify({ version: 1, directory: dir, server: connection.serverUrl, files: result.files.map((f) => join(dir, f.path)), controls, agents: state.agents.length, skipped: result.skipped }, null, 2)}\n`,
    );
  } else {
    // `export exported/` names the directory as typed, not as exported//.
    process.stdout.write(`Exported ${controls} control(s) and ${state.agents.length} agent(s) to ${dir.endsWith('/') ? dir : `${dir}/`}\n`);
    for (const name of result.skipped) process.stdout.write(`  skipped "${name}": it has no data yet\n`);
  }
  return 0;
}
