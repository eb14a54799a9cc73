import { describe, expect, it } from 'vitest';
import { colors } from '../../../cli/output/color.js';
import { renderShadowReportText } from '../../../cli/output/shadow-report.js';
import type { ShadowReport } from '../../../src/model/index.js';

const control = (evaluated: number) =>
  ({ control_id: 1, control_name: 'c', action: 'deny', evaluated, would_deny: 0, would_steer: 0, matches: 0, errors: 0, examples: [] }) as unknown as ShadowReport['controls'][number];
const report = (evaluated: number) => ({ since: '2026-01-01T00:00:00.000Z', agent_name: null, controls: [control(evaluated)] }) as unknown as ShadowReport;

describe('shadow-report text', () => {
  it('says that figures arrive every flush interval, so "evaluated 0 steps" right after traffic is not read as "no traffic"', () => {
    const text = renderShadowReportText(report(0), { server: 'http://s', window: 'last 1h' }, colors(false));
    expect(text).toContain('evaluated 0 steps');
    expect(text).toMatch(/every flush interval \(OBSERVABILITY_FLUSH_INTERVAL_SECONDS, default 10 s\)/);
  });
});
