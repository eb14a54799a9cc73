import type { Command } from 'commander';
import { countBySeverity, sortDiagnostics } from '../../src/gitops/diagnostics.js';
import { checkWithServer, loadDirectory } from '../../src/gitops/directory.js';
import { createRegistryFromEnv } from '../../src/evaluators/registry.js';
import { addConnectionOptions, clientOf, connectionOf, formatOption, withServer, type ConnectionFlags } from '../options.js';
import { withExamples } from '../help.js';
import { colors, shouldColor } from '../output/color.js';
import { renderDiagnosticsGithub, renderDiagnosticsJson, renderDiagnosticsText } from '../output/diagnostics.js';

export interface ValidateOptions extends ConnectionFlags {
  format: 'text' | 'json' | 'github';
  online?: boolean;
}

export function registerValidate(program: Command): void {
  const command = program
    .command('validate')
    .description('Check a controls directory offline (schema, links, evaluators); --server also asks the server')
    .argument('[dir]', 'the controls directory', 'controls')
    .addOption(formatOption(['text', 'json', 'github']))
    .option('--online', 'also ask the server at GUARD_URL (implied by --server)');
  addConnectionOptions(command).action(async (dir: string, options: ValidateOptions) => {
    process.exitCode = await runValidate(dir, options);
  });
  withExamples(command, [
    ['check ./controls offline: code frames with file:line:column and a hint', 'guardctl validate controls'],
    ['in a GitHub workflow: annotations on the changed lines', 'guardctl validate controls --format github'],
    ['also ask the server (evaluator plugins it has, links to controls it holds)', 'guardctl validate controls --server http://127.0.0.1:8000'],
  ]);
}

/** Exit code: 0 valid (warnings allowed), 1 invalid. */
export async function runValidate(dir: string, options: ValidateOptions): Promise<number> {
  const registry = await createRegistryFromEnv(process.env);
  const loaded = await loadDirectory(dir, registry);
  let diagnostics = loaded.diagnostics;
  let server: string | null = null;
  // Broken directories are never sent anywhere; the server is asked only about valid ones.
  if ((options.server || options.online) && countBySeverity(diagnostics).errors === 0) {
    const connection = connectionOf(options);
    server = connection.serverUrl;
    const remote = await withServer(connection, () => checkWithServer(clientOf(connection), loaded));
    diagnostics = sortDiagnostics([...diagnostics, ...remote]);
  }
  const sources = new Map(loaded.files.map((f) => [f.path, f.text]));
  const text =
    options.format === 'json'
      ? renderDiagnosticsJson(diagnostics, { directory: dir, server, files: loaded.files.length, controls: loaded.controls.length, agents: loaded.agents.length })
      : options.format === 'github'
        ? renderDiagnosticsGithub(diagnostics)
        : renderDiagnosticsText(diagnostics, sources, colors(shouldColor(process.stdout)));
  process.stdout.write(text);
  return countBySeverity(diagnostics).errors > 0 ? 1 : 0;
}
