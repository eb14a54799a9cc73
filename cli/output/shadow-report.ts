/** `guardctl shadow-report` for people (one block per control) and machines (the server's JSON). */
import type { ShadowControlReport, ShadowReport } from '../../src/model/index.js';
import type { Colors } from './color.js';

export const SHADOW_REPORT_JSON_VERSION = 1;

const count = (n: number): string => n.toLocaleString('en-US');

function wouldDo(c: ShadowControlReport): string {
  return c.action === 'deny' ? 'would deny' : c.action === 'steer' ? 'would steer' : `would ${c.action}`;
}

export function renderShadowReportText(report: ShadowReport, ctx: { server: string; window: string }, c: Colors): string {
  const scope = report.agent_name === null ? '' : ` for agent "${report.agent_name}"`;
  const out = [c.dim(`Shadow controls on ${ctx.server}${scope}, ${ctx.window === 'window' ? 'since' : `${ctx.window}, since`} ${report.since}`), ''];
  if (report.controls.length === 0) {
    out.push('No controls are in shadow mode. Set "mode: shadow" on a control to measure it before it blocks anything.');
    return `${out.join('\n')}\n`;
  }
  for (const control of report.controls) {
    out.push(c.bold(`${control.control_name}  (${wouldDo(control)}, id ${control.control_id})`));
    out.push(
      `  evaluated ${count(control.evaluated)} steps   would deny ${count(control.would_deny)}   would steer ${count(control.would_steer)}   matched ${count(control.matches)}   errors ${count(control.errors)}`,
    );
    if (control.examples.length > 0) out.push('  examples (what the control read is masked):');
    for (const e of control.examples) {
      out.push(`    ${e.timestamp}  ${e.agent_name}  ${e.step_name || '?'} (${e.step_type}, ${e.stage})  trace ${e.trace_id}`);
      out.push(c.dim(`      ${e.step === null ? '(step too large to keep)' : JSON.stringify(e.step)}`));
    }
    out.push('');
  }
  const n = report.controls.length;
  out.push(`${n} shadow control${n === 1 ? '' : 's'}. Promote one with "mode: enforce"; guardctl plan shows these figures on the change.`);
  // The figures are read from stored events, which the server writes in batches.
  out.push(c.dim('Steps are counted once the server writes their events, every flush interval (OBSERVABILITY_FLUSH_INTERVAL_SECONDS, default 10 s): the most recent steps may not be in these figures yet.'));
  return `${out.join('\n')}\n`;
}

export function renderShadowReportJson(report: ShadowReport, server: string): string {
  return `${JSON.stringify({ version: SHADOW_REPORT_JSON_VERSION, server, ...report }, null, 2)}\n`;
}
