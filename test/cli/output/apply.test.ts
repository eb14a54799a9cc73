import { describe, expect, it } from 'vitest';
import { renderApplyText } from '../../../cli/output/apply.js';
import { colors } from '../../../cli/output/color.js';
import type { ApplyResult } from '../../../src/gitops/apply.js';
import type { Operation } from '../../../src/gitops/plan.js';

const op: Operation = { op: 'delete_control', name: 'x' };
const c = colors(false);

describe('apply output', () => {
  it('a stale plan: says another writer won, that this run changed nothing, and to plan again', () => {
    const result: ApplyResult = {
      done: [],
      failed: { operation: op, status: 409, code: 'stale_revision', error: 'HTTP 409: the server changed since this plan was made: it is at revision 9, the plan was made at revision 7 (the other 3 operation(s) of its batch were rolled back with it)' },
      notDone: [],
    };
    const text = renderApplyText(result, c);
    expect(text).toContain('✗ apply refused: the server changed since this plan was made: it is at revision 9, the plan was made at revision 7\n');
    expect(text).toContain('this run changed nothing');
    expect(text).toContain('run "guardctl plan" again');
    expect(text).not.toMatch(/picks up where/);
  });

  it('never promises that running apply again gets past a refusal', () => {
    for (const failed of [
      { operation: op, status: 409, code: 'conflict', error: 'HTTP 409: a control named "x" already exists' },
      { operation: op, status: 409, code: 'read_only', error: 'HTTP 409: kept by a watched directory' },
      { operation: op, error: 'fetch failed' },
    ]) {
      const text = renderApplyText({ done: [], failed, notDone: [] }, c);
      expect(text).not.toMatch(/picks up where/);
      expect(text.match(/HTTP 409|fetch failed/g)?.length ?? 0).toBeLessThanOrEqual(1);
    }
  });
});

describe('errorMessage', () => {
  it('says a refusal once: an issue that repeats the detail is not added again', async () => {
    const { ApiError } = await import('../../../src/errors.js');
    const { errorMessage } = await import('../../../src/gitops/errors.js');
    const detail = 'change 1: control "w-0" is kept by the watched directory controls; edit it there';
    const error = new ApiError(409, { type: 't', title: 'Conflict', status: 409, detail, error_code: 'read_only', errors: [{ field: 'changes[0]', code: 'read_only', message: 'control "w-0" is kept by the watched directory controls; edit it there' }] }, 'POST', 'http://x');
    expect(errorMessage(error)).toBe(`HTTP 409: ${detail}`);
    const other = new ApiError(422, { type: 't', title: 'Invalid', status: 422, detail: 'the request body is not valid', error_code: 'validation_failed', errors: [{ field: 'changes[0].control.data.action', code: 'invalid', message: 'Required' }] }, 'POST', 'http://x');
    expect(errorMessage(other)).toBe('HTTP 422: the request body is not valid (changes[0].control.data.action: Required)');
  });
});
