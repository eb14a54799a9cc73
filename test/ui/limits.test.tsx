import { render } from 'ink-testing-library';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Dashboard, type DashboardSink } from '../../cli/ui/app.js';
import { initialState, reduce } from '../../cli/ui/state.js';

let unmount: (() => void) | null = null;
afterEach(() => {
  unmount?.();
  unmount = null;
});

describe('rate and budget use on the dashboard', () => {
  it('keeps the latest use the server reported', () => {
    const limits = [{ control_name: 'refunds-per-day', key: 'c-17', used: 450, limit: 500, ratio: 0.9 }];
    const state = reduce(initialState(), { type: 'limits/received', limits });
    expect(state.limits).toEqual(limits);
    expect(reduce(state, { type: 'limits/received', limits: [] }).limits).toEqual([]);
  });

  it('draws each control and key with its use against the limit', async () => {
    let sink: DashboardSink | null = null;
    const app = render(
      <Dashboard server="http://guard.test:8000" source={(s) => ((sink = s), () => undefined)} width={120} height={24} throttleMs={5} />,
    );
    unmount = app.unmount;
    await vi.waitFor(() => expect(sink).not.toBeNull());
    sink!.limits!([
      { control_name: 'searches-per-user', key: 'ann', used: 31, limit: 30, ratio: 31 / 30 },
      { control_name: 'refunds-per-day', key: 'c-17', used: 450.5, limit: 500, ratio: 0.901 },
    ]);
    await vi.waitFor(() => expect(app.lastFrame()).toContain('LIMIT / KEY'), { timeout: 30_000 });
    const frame = app.lastFrame() ?? '';
    expect(frame).toMatch(/searches-per-user\s*\n.*ann\s+31\/30/);
    expect(frame).toMatch(/refunds-per-day\s*\n.*c-17\s+450\.5\/500/);
  });
});
