/**
 * Diagnostics for people (a code frame each), for machines (JSON) and for GitHub Actions
 * (workflow annotations). The layout is described in docs/output-style.md.
 */
import type { Diagnostic } from '../../src/gitops/diagnostics.js';
import { countBySeverity } from '../../src/gitops/diagnostics.js';
import type { Colors } from './color.js';

export const DIAGNOSTICS_JSON_VERSION = 1;

/** One code frame per diagnostic: where, what, the source line with a caret, then the fix. */
export function renderDiagnosticsText(
  diagnostics: readonly Diagnostic[],
  sources: ReadonlyMap<string, string>,
  c: Colors,
): string {
  const out: string[] = [];
  for (const d of diagnostics) {
    const label = d.severity === 'error' ? c.red(c.bold('error')) : c.yellow(c.bold('warning'));
    out.push(`${c.bold(`${d.file}:${d.line}:${d.column}`)} ${label} ${d.message} ${c.dim(`[${d.code}]`)}`);
    const frame = codeFrame(sources.get(d.file), d, c);
    if (frame) out.push(frame);
    if (d.hint) out.push(`  ${c.cyan('hint:')} ${d.hint}`);
    out.push('');
  }
  out.push(summaryLine(diagnostics, c));
  return `${out.join('\n')}\n`;
}

export function summaryLine(diagnostics: readonly Diagnostic[], c: Colors): string {
  const { errors, warnings } = countBySeverity(diagnostics);
  if (errors === 0 && warnings === 0) return c.green('✓ valid: no problems found');
  const parts = [`${errors} error${errors === 1 ? '' : 's'}`, `${warnings} warning${warnings === 1 ? '' : 's'}`];
  return errors > 0 ? c.red(`✗ ${parts.join(', ')}`) : c.yellow(`✓ valid with ${parts.join(', ')}`);
}

/** The line before, the line itself, a caret under the column (spanning the range on one line). */
export function codeFrame(text: string | undefined, d: Pick<Diagnostic, 'line' | 'column' | 'endLine' | 'endColumn'>, c: Colors): string | null {
  if (text === undefined) return null;
  const lines = text.split(/\r?\n/);
  const line = lines[d.line - 1];
  if (line === undefined) return null;
  const width = String(d.line).length;
  const gutter = (n: number | null) => c.dim(`${n === null ? ' '.repeat(width) : String(n).padStart(width)} | `);
  const out: string[] = [];
  const before = lines[d.line - 2];
  if (d.line > 1 && before !== undefined && before.trim() !== '') out.push(`  ${gutter(d.line - 1)}${before}`);
  out.push(`  ${gutter(d.line)}${line}`);
  const sameLine = d.endLine === d.line && d.endColumn !== undefined && d.endColumn > d.column;
  const length = sameLine ? Math.min(d.endColumn! - d.column, Math.max(1, line.length - d.column + 1)) : 1;
  out.push(`  ${gutter(null)}${' '.repeat(Math.max(0, d.column - 1))}${c.red('^'.repeat(Math.max(1, length)))}`);
  return out.join('\n');
}

export function renderDiagnosticsJson(diagnostics: readonly Diagnostic[], extra: Record<string, unknown> = {}): string {
  const { errors, warnings } = countBySeverity(diagnostics);
  return `${JSON.stringify({ version: DIAGNOSTICS_JSON_VERSION, valid: errors === 0, errors, warnings, diagnostics, ...extra }, null, 2)}\n`;
}

/** GitHub workflow commands: `::error file=…,line=…,col=…,title=…::message`. */
export function renderDiagnosticsGithub(diagnostics: readonly Diagnostic[]): string {
  const lines = diagnostics.map((d) => {
    const props = [
      `file=${escapeProperty(d.file)}`,
      `line=${d.line}`,
      `col=${d.column}`,
      ...(d.endLine !== undefined ? [`endLine=${d.endLine}`] : []),
      ...(d.endColumn !== undefined && d.endLine === d.line ? [`endColumn=${d.endColumn}`] : []),
      `title=${escapeProperty(`guardctl ${d.code}`)}`,
    ];
    const message = d.hint ? `${d.message}\n${d.hint}` : d.message;
    return `::${d.severity === 'error' ? 'error' : 'warning'} ${props.join(',')}::${escapeData(message)}`;
  });
  const { errors, warnings } = countBySeverity(diagnostics);
  lines.push(`guardctl validate: ${errors} error(s), ${warnings} warning(s)`);
  return `${lines.join('\n')}\n`;
}

function escapeData(text: string): string {
  return text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');
}
