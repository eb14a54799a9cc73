/** Reading and checking a controls directory: the fs walk, then the pure loader. */
import type { GuardClient } from '../client/index.js';
import { ApiError } from '../errors.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import { controlValidator } from './control-validator.js';
import type { Diagnostic } from './diagnostics.js';
import { sortDiagnostics } from './diagnostics.js';
import { mapLimit } from './fetch-state.js';
import { classifyIssue, hintFor } from './hints.js';
import { loadDocuments, type LoadResult, type SourceFile } from './load.js';
import { readYamlDirectory } from './read-dir.js';

export interface LoadedDirectory extends LoadResult {
  directory: string;
  files: SourceFile[];
}

export async function loadDirectory(directory: string, registry: EvaluatorRegistry): Promise<LoadedDirectory> {
  const read = await readYamlDirectory(directory);
  const loaded = loadDocuments(read.files, { validateControl: controlValidator(registry) });
  const diagnostics = sortDiagnostics([...read.diagnostics, ...loaded.diagnostics]);
  if (read.files.length === 0 && read.diagnostics.length === 0) {
    diagnostics.push({
      severity: 'error', file: directory, line: 1, column: 1, field: '', code: 'no_documents',
      message: 'no *.yaml or *.yml files found', hint: 'pass the directory that holds your control files',
    });
  }
  return { ...loaded, diagnostics, directory, files: read.files };
}

/**
 * The server's opinion of a directory that is valid offline: every evaluator it uses is one
 * the server knows, and every control passes the server's POST /controls/validate.
 */
export async function checkWithServer(client: GuardClient, loaded: LoadResult): Promise<Diagnostic[]> {
  const known = new Set((await client.listEvaluators()).map((e) => e.name));
  const out: Diagnostic[] = [];
  await mapLimit(loaded.controls, 8, async (control) => {
    for (const [field, name] of evaluatorNames(control.data)) {
      if (known.has(name)) continue;
      const at = control.locate(field);
      out.push({
        severity: 'error', file: control.source.file, line: at.line, column: at.column, field, code: 'unknown_evaluator',
        message: `the server does not know evaluator "${name}" (it has: ${[...known].sort().join(', ')})`,
        hint: 'install the evaluator plugin on the server (GUARD_EVALUATORS) or use one it lists',
      });
    }
    try {
      await client.validateControlData(control.data);
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 422) throw error;
      for (const issue of error.problem?.errors ?? [{ field: '', code: 'invalid', message: error.message }]) {
        const field = issue.field.replace(/^data\.?/, '');
        const code = classifyIssue({ ...issue, field });
        const at = control.locate(field, code === 'unknown_field');
        out.push({
          severity: 'error', file: control.source.file, line: at.line, column: at.column, field, code,
          message: `the server rejects it: ${field ? `${field}: ` : ''}${issue.message}`, hint: hintFor(code, field, issue.message),
        });
      }
    }
  });
  return sortDiagnostics(out);
}

function evaluatorNames(data: LoadResult['controls'][number]['data']): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  if (data.evaluator) out.push(['evaluator.name', data.evaluator.name]);
  const walk = (node: unknown, path: string) => {
    if (!node || typeof node !== 'object') return;
    const n = node as Record<string, unknown>;
    if (Array.isArray(n.and)) n.and.forEach((c, i) => walk(c, `${path}.and[${i}]`));
    if (Array.isArray(n.or)) n.or.forEach((c, i) => walk(c, `${path}.or[${i}]`));
    if (n.not) walk(n.not, `${path}.not`);
    const ev = n.evaluator as { name?: unknown } | undefined;
    if (ev && typeof ev.name === 'string') out.push([`${path}.evaluator.name`, ev.name]);
  };
  if (data.condition) walk(data.condition, 'condition');
  return out;
}
