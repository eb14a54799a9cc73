/** The step every GitOps command shares: load the directory, and stop (exit 1) on errors. */
import { UserError } from '../../src/errors.js';
import { createRegistryFromEnv } from '../../src/evaluators/registry.js';
import { hasErrors } from '../../src/gitops/diagnostics.js';
import { loadDirectory, type LoadedDirectory } from '../../src/gitops/directory.js';
import { colors, shouldColor } from './color.js';
import { renderDiagnosticsText } from './diagnostics.js';

/**
 * Loads `directory`; on any error prints the diagnostics to stderr and throws, so nothing
 * is sent to the server. The error carries them, so `--format json` has them on stdout.
 */
export async function loadValidDirectory(directory: string): Promise<LoadedDirectory> {
  const registry = await createRegistryFromEnv(process.env);
  const loaded = await loadDirectory(directory, registry);
  if (hasErrors(loaded.diagnostics)) {
    const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
    const sources = new Map(loaded.files.map((f) => [f.path, f.text]));
    process.stderr.write(renderDiagnosticsText(errors, sources, colors(shouldColor(process.stderr))));
    const invalid = new UserError(
      `${directory} has ${errors.length} error(s); nothing was sent to the server`,
      `fix them and run again ("guardctl validate ${directory}" shows them)`,
    );
    invalid.details = { diagnostics: errors };
    throw invalid;
  }
  return loaded;
}
