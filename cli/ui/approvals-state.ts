/**
 * The dashboard's pending approvals (docs/approvals.md, docs/dashboard.md): a list kept from
 * the server's (polled) and the stream's `approval` events, a selection, and a
 * confirmation before anything is decided. Pure: deciding is the component's job, on
 * `approvals/execute`.
 */
import type { ApprovalNotice, ApprovalRecord } from '../../src/model/index.js';

export type ApprovalVerb = 'approve' | 'deny';

export interface ApprovalsState {
  /** Pending approvals, oldest first (the one waiting longest on top). */
  pending: ApprovalRecord[];
  /** True while keys go to the approvals pane (`a` toggles). */
  focused: boolean;
  /** The selected approval's id; null selects the first. */
  selectedId: string | null;
  /** The decision waiting for y (confirm) or n/esc (cancel). */
  confirm: { verb: ApprovalVerb; id: string } | null;
  /** The last outcome, shown in the pane: `approved apr_…`, or the server's refusal. */
  message: string | null;
}

export type ApprovalsAction =
  | { type: 'approvals/received'; approvals: ApprovalRecord[] }
  | { type: 'approvals/notice'; notice: ApprovalNotice }
  | { type: 'approvals/focus' }
  | { type: 'approvals/move'; delta: number }
  | { type: 'approvals/ask'; verb: ApprovalVerb }
  | { type: 'approvals/cancel' }
  | { type: 'approvals/execute' }
  | { type: 'approvals/done'; id: string; outcome: string };

export function initialApprovals(): ApprovalsState {
  return { pending: [], focused: false, selectedId: null, confirm: null, message: null };
}

export function selectedApproval(state: ApprovalsState): ApprovalRecord | null {
  return state.pending.find((a) => a.id === state.selectedId) ?? state.pending[0] ?? null;
}

const byAge = (a: ApprovalRecord, b: ApprovalRecord) => a.created_at.localeCompare(b.created_at);

export function reduceApprovals(state: ApprovalsState, action: ApprovalsAction): ApprovalsState {
  switch (action.type) {
    case 'approvals/received':
      return keepConfirm({ ...state, pending: action.approvals.filter((a) => a.status === 'pending').sort(byAge) });
    case 'approvals/notice': {
      const { approval } = action.notice;
      const others = state.pending.filter((a) => a.id !== approval.id);
      return keepConfirm({ ...state, pending: action.notice.event === 'asked' ? [...others, approval].sort(byAge) : others });
    }
    case 'approvals/focus':
      return { ...state, focused: !state.focused, confirm: null };
    case 'approvals/move': {
      if (state.pending.length === 0) return state;
      const at = Math.max(0, state.pending.findIndex((a) => a.id === selectedApproval(state)?.id));
      const next = Math.min(state.pending.length - 1, Math.max(0, at + action.delta));
      return { ...state, selectedId: state.pending[next]!.id, confirm: null };
    }
    case 'approvals/ask': {
      const selected = selectedApproval(state);
      return selected === null ? state : { ...state, confirm: { verb: action.verb, id: selected.id }, message: null };
    }
    case 'approvals/cancel':
      return { ...state, confirm: null };
    case 'approvals/execute':
      return state.confirm === null ? state : { ...state, confirm: null, message: `${state.confirm.verb === 'approve' ? 'approving' : 'denying'} ${state.confirm.id}…` };
    case 'approvals/done':
      return { ...state, message: action.outcome, pending: state.pending.filter((a) => a.id !== action.id || !/^(approved|denied) /.test(action.outcome)) };
  }
}

/** A confirmation stays only while its approval is still pending: another person may have decided it. */
function keepConfirm(state: ApprovalsState): ApprovalsState {
  if (state.confirm === null || state.pending.some((a) => a.id === state.confirm!.id)) return state;
  return { ...state, confirm: null, message: `${state.confirm.id} was decided elsewhere` };
}
