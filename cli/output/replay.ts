/**
 * The replay section of `guardctl plan --replay`: how decisions on recorded traffic would
 * change. Text for people, markdown for the pull-request comment, a JSON value for machines.
 */
import { describeChange, type ReplayReport } from '../../src/replay/index.js';
import type { Colors } from './color.js';

export function replayHeadline(r: ReplayReport): string {
  if (r.total === 0) return `Replay: nothing to replay: ${whyNothing(r)}`;
  if (r.evaluated === 0) return `Replay: none of the ${r.total.toLocaleString('en-US')} records could be replayed (each was skipped: see the warnings).`;
  const of = `${r.evaluated.toLocaleString('en-US')} recorded step${r.evaluated === 1 ? '' : 's'}`;
  if (r.changes.length === 0) return `Replay: no decision changes on ${of}.`;
  const changed = r.changes.reduce((n, c) => n + c.count, 0);
  return `Replay: ${changed.toLocaleString('en-US')} of ${of} would be decided differently.`;
}

/** Why a replay read no records, and what to do: "0 recorded steps" would hide it. */
function whyNothing(r: ReplayReport): string {
  if (r.recording === undefined) return `${r.source} holds no steps.`;
  const server = r.source.replace(/\/api\/v1\/recordings$/, '');
  return r.recording
    ? `the server at ${server} records steps but has none yet (or none within GUARD_RECORD_RETENTION_DAYS); send it some traffic first.`
    : `the server at ${server} records no steps (GUARD_RECORD_STEPS is off there); turn it on, or replay a file of steps (--replay steps.jsonl).`;
}

function topControls(controls: Record<string, number>, max = 5): string {
  const list = Object.entries(controls).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const shown = list.slice(0, max).map(([name, n]) => `${name} (${n.toLocaleString('en-US')})`);
  if (list.length > max) shown.push(`${list.length - max} more`);
  return shown.join(', ') || '(none)';
}

export function renderReplayText(r: ReplayReport, c: Colors): string {
  const out = ['', c.bold(replayHeadline(r)), c.dim(`  source: ${r.source}; ${r.total.toLocaleString('en-US')} read, ${r.skipped.toLocaleString('en-US')} skipped`)];
  for (const change of r.changes) {
    const paint = (text: string) => (change.to === 'deny' ? c.red(text) : change.to === 'steer' ? c.yellow(text) : c.green(text));
    out.push(`  ${paint(describeChange(change, r.evaluated))}`);
    out.push(`    controls: ${topControls(change.controls)}`);
    for (const e of change.examples) {
      out.push(c.dim(`    e.g. ${e.label}: ${e.agent_name} ${e.stage} ${e.step_type} "${e.step_name}" input ${e.input_excerpt}`));
    }
  }
  for (const w of r.warnings) out.push(c.yellow(`  warning: ${w}`));
  if (r.skipped > r.warnings.length) out.push(c.yellow(`  warning: ${r.skipped - r.warnings.length} more skipped record(s) not shown`));
  return `${out.join('\n')}\n`;
}

export function renderReplayMarkdown(r: ReplayReport): string {
  const out = ['', '#### Replay of recorded traffic', '', replayHeadline(r), ''];
  if (r.changes.length > 0) {
    out.push('| change | steps | controls responsible |', '|---|---:|---|');
    for (const change of r.changes) {
      out.push(`| ${cell(describeChange(change, r.evaluated))} | ${change.count.toLocaleString('en-US')} | ${cell(topControls(change.controls))} |`);
    }
    out.push('', '<details><summary>Examples</summary>', '');
    for (const change of r.changes) {
      out.push(`**${change.from} → ${change.to}**`, '');
      for (const e of change.examples) {
        out.push(`- ${cell(e.label)}: \`${code(e.agent_name)}\` ${e.stage} ${e.step_type} \`${code(e.step_name)}\` input \`${code(e.input_excerpt)}\` (${cell(e.controls.join(', ') || 'no control')})`);
      }
      out.push('');
    }
    out.push('</details>', '');
  }
  const skipped = r.skipped > 0 ? `; ${r.skipped.toLocaleString('en-US')} skipped (no longer fit the model)` : '';
  out.push(`<sub>replayed ${r.evaluated.toLocaleString('en-US')} of ${r.total.toLocaleString('en-US')} recorded steps from ${cell(r.source)}${skipped}</sub>`, '');
  return out.join('\n');
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

function code(text: string): string {
  return cell(text).replace(/`/g, "'");
}
