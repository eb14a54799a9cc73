/**
 * `guardctl eval` reports: a table per control for people, Markdown for a pull-request
 * comment, and the report as JSON. Listed texts come masked from the library.
 */
import type { CaseNote, ControlScore, EvalReport } from '../../src/eval/index.js';
import type { Colors } from './color.js';

const HEADERS = ['control', 'cases', 'TP', 'FP', 'TN', 'FN', 'errors', 'precision', 'recall', 'F1', 'p50', 'p95'] as const;

export function renderEvalJson(report: EvalReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}

const ratio = (n: number | null) => (n === null ? '–' : n.toFixed(3));

/** A duration for a table: µs below a millisecond. */
export function formatMs(ms: number | null): string {
  if (ms === null) return '–';
  if (ms < 1) return `${(ms * 1000).toFixed(ms < 0.01 ? 1 : 0)} µs`;
  return `${ms.toFixed(ms < 10 ? 2 : 0)} ms`;
}

function cells(s: ControlScore): string[] {
  return [s.kind === 'decision' ? '(decision)' : s.name, String(s.cases), String(s.tp), String(s.fp), String(s.tn), String(s.fn), String(s.errors), ratio(s.precision), ratio(s.recall), ratio(s.f1), formatMs(s.p50_ms), formatMs(s.p95_ms)];
}

function headline(report: EvalReport): string {
  return `${report.dataset} (${report.via}): ${report.cases} case${report.cases === 1 ? '' : 's'} evaluated`;
}

export function renderEvalText(report: EvalReport, c: Colors): string {
  const out = [c.bold(headline(report)), ''];
  const rows = [[...HEADERS], ...report.controls.map(cells)];
  const widths = HEADERS.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const [n, r] of rows.entries()) {
    const line = r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
    out.push(n === 0 ? c.dim(line) : line);
  }
  for (const s of report.controls) {
    const listed = [...notes('miss', s.misses, s.misses_total), ...notes('false positive', s.false_positives, s.false_positives_total)];
    if (listed.length > 0) out.push('', c.bold(s.kind === 'decision' ? '(decision)' : s.name), ...listed);
  }
  if (report.diagnostics.length > 0) {
    out.push('', c.red(`${report.diagnostics.length} line${report.diagnostics.length === 1 ? '' : 's'} not evaluated:`));
    for (const d of report.diagnostics) {
      out.push(`  ${report.dataset}:${d.line}${d.id === undefined ? '' : ` (id ${d.id})`}: ${d.message}`, c.dim(`    ${d.hint}`));
    }
  }
  out.push('', ...gateLines(report).map((l) => (l.startsWith('✗') ? c.red(l) : c.green(l))));
  return `${out.join('\n')}\n`;
}

function notes(what: 'miss' | 'false positive', list: readonly CaseNote[], total: number): string[] {
  if (total === 0) return [];
  const plural = what === 'miss' ? 'misses' : 'false positives';
  const lines = [`  ${total} ${total === 1 ? what : plural}:`];
  for (const n of list) lines.push(`    line ${n.line}, id ${n.id}: ${oneLine(n.detail)}`);
  if (total > list.length) lines.push(`    … and ${total - list.length} more`);
  return lines;
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

function gateLines(report: EvalReport): string[] {
  const lines = report.gates.failures.map((f) => `✗ ${f.name}: ${f.metric} ${f.value.toFixed(3)} is below ${f.min}`);
  if (report.cases === 0) lines.push('✗ no case was evaluated');
  if (lines.length === 0 && report.diagnostics.length === 0) {
    const gates = [report.gates.min_precision === null ? null : `precision ≥ ${report.gates.min_precision}`, report.gates.min_recall === null ? null : `recall ≥ ${report.gates.min_recall}`].filter((g) => g !== null);
    lines.push(gates.length > 0 ? `✓ every control holds ${gates.join(' and ')}` : '✓ every line evaluated');
  }
  return lines;
}

const md = (text: string) => text.replace(/[|\\`*_[\]<>]/g, (ch) => `\\${ch}`).replace(/\s+/g, ' ');

export function renderEvalMarkdown(report: EvalReport): string {
  const out = [`### guardctl eval: ${md(headline(report))}`, ''];
  out.push(`| ${HEADERS.join(' | ')} |`, `|${HEADERS.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`);
  for (const s of report.controls) out.push(`| ${cells(s).map(md).join(' | ')} |`);
  for (const s of report.controls) {
    const listed = [...notes('miss', s.misses, s.misses_total), ...notes('false positive', s.false_positives, s.false_positives_total)];
    if (listed.length === 0) continue;
    out.push('', `<details><summary>${md(s.kind === 'decision' ? '(decision)' : s.name)}: ${s.misses_total} missed, ${s.false_positives_total} false positive(s)</summary>`, '');
    for (const l of listed) out.push(l.startsWith('    ') ? `- ${md(l.trim())}` : `**${md(l.trim())}**`, '');
    out.push('</details>');
  }
  if (report.diagnostics.length > 0) {
    out.push('', `**${report.diagnostics.length} line(s) not evaluated**`, '');
    for (const d of report.diagnostics) out.push(`- line ${d.line}${d.id === undefined ? '' : ` (id ${md(d.id)})`}: ${md(d.message)}`);
  }
  out.push('', ...gateLines(report).map((l) => md(l)));
  return `${out.join('\n')}\n`;
}
