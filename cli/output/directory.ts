/** The step every GitOps command shares: load the directory, and stop (exit 1) on errors. */
import { UserError } from '../../src/errors.js';
import { createRegistryFromEnv } from '../../src/evaluators/registry.js';
import { hasErrors } from '../../src/gitops/diagnostics.js';
import { loadDirectory, type LoadedDirectory } from '../../src/gitops/directory.js';
import { colors, shouldColor } from './color.js';
import { renderDiagnosticsJson, renderDiagnosticsText } from './diagnostics.js';

/**
 * Loads `directory`; on any error prints the diagnostics (JSON when asked) to stderr and
 * throws, so nothing is sent to the server.
 */
export async function loadValidDirectory(directory: string, format: string): Promise<LoadedDirectory> {
  const registry = await createRegistryFromEnv(process.env);
  const loaded = await loadDirectory(directory, registry);
  if (hasErrors(loaded.diagnostics)) {
    const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
    const sources = new Map(loaded.files.map((f) => [f.path, f.text]));
    process.stderr.write(
      format === 'json' ? renderDiagnosticsJson(errors) : renderDiagnosticsText(errors, sources, colors(shouldColor(process.stderr))),
    );
    throw new UserError(
      `${directory} has ${errors.length} error(s); nothing was sent to the server`,
      `fix them and run again ("guardctl validate ${directory}" shows them)`,
    );
  }
  return loaded;
}
