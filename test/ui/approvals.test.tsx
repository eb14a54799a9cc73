// The dashboard's approvals pane: the reducer (list, stream events, selection, confirmation)
// and the drawn pane with keys, ink-testing-library driving it.
import { render } from 'ink-testing-library';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Dashboard, type DashboardSink } from '../../cli/ui/app.js';
import { keyToAction } from '../../cli/ui/keys.js';
import { initialState, reduce, type DashboardState } from '../../cli/ui/state.js';
import type { ApprovalRecord } from '../../src/model/index.js';

function approval(id: string, created: string, step = 'pay'): ApprovalRecord {
  return {
    id, status: 'pending', agent_name: 'payer', stage: 'pre', step_type: 'tool', step_name: step, control_id: 7, control_name: 'large-payments',
    step: { type: 'tool', name: step, input: { amount: 82_000 } }, created_at: created, expires_at: '2030-01-01T00:00:00.000Z',
    decided_at: null, decided_by: null, reason: null, used_at: null,
  };
}

const A = approval('apr_a', '2026-01-01T00:00:01.000Z');
const B = approval('apr_b', '2026-01-01T00:00:02.000Z', 'deploy');

function press(state: DashboardState, ...keys: Array<string | { escape?: boolean; return?: boolean; downArrow?: boolean }>): DashboardState {
  for (const k of keys) {
    const action = typeof k === 'string' ? keyToAction(state, k, {}) : keyToAction(state, '', k);
    if (action && action.type !== 'quit') state = reduce(state, action);
  }
  return state;
}

let unmount: (() => void) | null = null;
afterEach(() => {
  unmount?.();
  unmount = null;
});

describe('approvals pane: reducer and keys', () => {
  it('keeps the pending list from the poll and the stream, the longest waiting first', () => {
    let s = reduce(initialState(), { type: 'approvals/received', approvals: [B, A, { ...A, id: 'apr_done', status: 'approved' }] });
    expect(s.approvals.pending.map((a) => a.id)).toEqual(['apr_a', 'apr_b']);
    s = reduce(s, { type: 'approvals/notice', notice: { timestamp: '', event: 'approved', approval: { ...A, status: 'approved' } } });
    expect(s.approvals.pending.map((a) => a.id)).toEqual(['apr_b']);
    s = reduce(s, { type: 'approvals/notice', notice: { timestamp: '', event: 'asked', approval: A } });
    expect(s.approvals.pending.map((a) => a.id)).toEqual(['apr_a', 'apr_b']);
  });

  it('asks for a confirmation before deciding, and n or esc cancels', () => {
    let s = reduce(initialState(), { type: 'approvals/received', approvals: [A, B] });
    // Without focus, y and n are not the pane's.
    expect(keyToAction(s, 'y', {})).toBeNull();
    s = press(s, 'a', 'j', 'y');
    expect(s.approvals.confirm).toEqual({ verb: 'approve', id: 'apr_b' });
    expect(press(s, 'n').approvals.confirm).toBeNull();
    expect(press(s, { escape: true }).approvals.confirm).toBeNull();
    // Keys other than the answer do nothing while it asks.
    expect(keyToAction(s, 'c', {})).toBeNull();
    expect(keyToAction(s, 'y', {})).toEqual({ type: 'approvals/execute' });
    const after = press(s, 'y');
    expect(after.approvals.confirm).toBeNull();
    expect(after.approvals.message).toBe('approving apr_b…');
    expect(press(s, 'k', 'n').approvals.confirm).toBeNull();
  });

  it('drops a confirmation whose approval someone else decided', () => {
    let s = press(reduce(initialState(), { type: 'approvals/received', approvals: [A] }), 'a', 'n');
    expect(s.approvals.confirm).toEqual({ verb: 'deny', id: 'apr_a' });
    s = reduce(s, { type: 'approvals/notice', notice: { timestamp: '', event: 'denied', approval: { ...A, status: 'denied' } } });
    expect(s.approvals.confirm).toBeNull();
    expect(s.approvals.message).toMatch(/decided elsewhere/);
  });
});

describe('approvals pane on screen', () => {
  it('shows pending approvals and approves the selected one after y, y', async () => {
    let sink: DashboardSink | null = null;
    const decided: string[] = [];
    const app = render(
      <Dashboard
        server="http://guard.test:8000"
        source={(s) => ((sink = s), () => undefined)}
        decide={async (verb, id) => (decided.push(`${verb} ${id}`), `${verb === 'approve' ? 'approved' : 'denied'} ${id}`)}
        width={120}
        height={24}
        throttleMs={5}
      />,
    );
    unmount = app.unmount;
    await vi.waitFor(() => expect(sink).not.toBeNull());
    sink!.approvals!([A, B]);
    await vi.waitFor(() => expect(app.lastFrame()).toContain('APPROVALS (2 pending)'), { timeout: 30_000 });
    expect(app.lastFrame()).toMatch(/payer pay · large-pay/);
    app.stdin.write('a');
    await vi.waitFor(() => expect(app.lastFrame()).toContain('y approve  n deny'));
    app.stdin.write('y');
    await vi.waitFor(() => expect(app.lastFrame()).toMatch(/approve apr_a…\? y yes, n no/));
    expect(decided).toEqual([]);
    app.stdin.write('y');
    await vi.waitFor(() => expect(app.lastFrame()).toContain('approved apr_a'));
    expect(decided).toEqual(['approve apr_a']);
    expect(app.lastFrame()).toContain('APPROVALS (1 pending)');
  });
});
