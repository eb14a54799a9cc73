import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';
import { ControlDataSchema, fieldIssuesOf, parseApprovalTimeout } from '../../src/model/index.js';
import { control, toolStep } from './helpers.js';

const ask = { selector: { path: 'input.to' }, evaluator: { name: 'regex', config: { pattern: '@customer' } }, action: { decision: 'ask' as const } };

function issuesOf(data: unknown) {
  const parsed = ControlDataSchema.safeParse(data);
  return parsed.success ? [] : fieldIssuesOf(parsed.error);
}

describe('ask controls', () => {
  it('validates with and without approval settings', () => {
    expect(issuesOf(ask)).toEqual([]);
    expect(issuesOf({ ...ask, action: { decision: 'ask', approval: { timeout: '2h' } } })).toEqual([]);
    expect(issuesOf({ ...ask, action: { decision: 'ask', approval: {} } })).toEqual([]);
  });

  it('refuses execution sdk, with the reason', () => {
    const issues = issuesOf({ ...ask, execution: 'sdk' });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.field).toBe('execution');
    expect(issues[0]!.message).toMatch(/runs on the server/);
  });

  it('refuses approval on another decision, and bad timeouts', () => {
    expect(issuesOf({ ...ask, action: { decision: 'deny', approval: { timeout: '1m' } } }).map((i) => i.field)).toEqual(['action.approval']);
    for (const timeout of ['15', '1w', '0m', '5s', '8d', ' 1m', '1.5h']) {
      const issues = issuesOf({ ...ask, action: { decision: 'ask', approval: { timeout } } });
      expect(issues.map((i) => i.field), timeout).toEqual(['action.approval.timeout']);
    }
    expect(issuesOf({ ...ask, action: { decision: 'ask', approval: { timeout: '1m', extra: 1 } } })).not.toEqual([]);
  });

  it('parses the timeout syntax', () => {
    expect(parseApprovalTimeout('30s')).toBe(30_000);
    expect(parseApprovalTimeout('15m')).toBe(900_000);
    expect(parseApprovalTimeout('7d')).toBe(7 * 86_400_000);
    expect(typeof parseApprovalTimeout('9s')).toBe('string');
  });

  it('compiles the timeout (default 15m) and fails closed on evaluator errors', async () => {
    const registry = createDefaultRegistry();
    const set = compileControls([control('a', ask), control('b', { ...ask, action: { decision: 'ask', approval: { timeout: '45s' } } })], registry);
    expect(set.controls.map((c) => c.approvalTimeoutMs)).toEqual([900_000, 45_000]);
    expect(set.controls[0]!.onError).toBe('deny');
    const { result } = await evaluateStep(set, toolStep('send', { to: 'x@customer' }), 'pre');
    expect(result).toMatchObject({ decision: 'ask', is_safe: false, steering_context: null });
    expect(result.approval).toBeUndefined();
  });
});
