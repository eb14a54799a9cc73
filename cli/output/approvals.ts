/** Approvals for people (one line each, or one in full) and a stable JSON shape. */
import type { ApprovalRecord } from '../../src/model/index.js';
import type { Colors } from './color.js';

export const APPROVALS_JSON_VERSION = 1;

function paint(status: ApprovalRecord['status'], c: Colors): (text: string) => string {
  switch (status) {
    case 'pending':
      return (text) => c.yellow(text);
    case 'approved':
      return (text) => c.green(text);
    case 'denied':
    case 'expired':
      return (text) => c.red(text);
  }
}

/** `apr_… pending  payer  tool pay (pre)  large-payments  expires 2026-…` */
export function approvalLine(a: ApprovalRecord, c: Colors): string {
  const when = a.status === 'pending' ? `expires ${a.expires_at}` : a.decided_at ? `${a.status} ${a.decided_at} by ${a.decided_by ?? '?'}` : `since ${a.expires_at}`;
  return `${a.id}  ${paint(a.status, c)(a.status.padEnd(8))}  ${a.agent_name}  ${a.step_type} ${a.step_name} (${a.stage})  ${a.control_name}  ${c.dim(when)}`;
}

export function renderApprovalList(approvals: readonly ApprovalRecord[], c: Colors): string {
  if (approvals.length === 0) return 'no approvals\n';
  return `${approvals.map((a) => approvalLine(a, c)).join('\n')}\n`;
}

/** One approval in full: the step as the server shows it (masked), and who decided and why. */
export function renderApproval(a: ApprovalRecord, c: Colors): string {
  const lines = [
    `${c.bold(a.id)}  ${paint(a.status, c)(a.status)}`,
    `  agent     ${a.agent_name}`,
    `  step      ${a.step_type} ${a.step_name} (${a.stage})`,
    `  control   ${a.control_name} (#${a.control_id})`,
    `  asked     ${a.created_at}`,
    `  expires   ${a.expires_at}`,
  ];
  if (a.decided_at) lines.push(`  decided   ${a.decided_at} by ${a.decided_by ?? '?'}${a.reason ? `: ${a.reason}` : ''}`);
  if (a.used_at) lines.push(`  ran       ${a.used_at}`);
  lines.push('  step (masked):', ...JSON.stringify(a.step, null, 2).split('\n').map((l) => `    ${l}`));
  if (a.status === 'pending') lines.push('', c.dim(`guardctl approvals approve ${a.id}   |   guardctl approvals deny ${a.id} --reason "..."`));
  return `${lines.join('\n')}\n`;
}

export function renderApprovalsJson(approvals: readonly ApprovalRecord[]): string {
  return `${JSON.stringify({ version: APPROVALS_JSON_VERSION, approvals }, null, 2)}\n`;
}
