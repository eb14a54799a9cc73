import { describe, expect, it } from 'vitest';
import { LabelLimiter, OTHER_LABEL } from '../../src/observability/label-limiter.js';

describe('LabelLimiter', () => {
  it('keeps the first N distinct values and reports the rest as other', () => {
    const limiter = new LabelLimiter(2);
    expect(limiter.value('a')).toBe('a');
    expect(limiter.value('b')).toBe('b');
    expect(limiter.value('c')).toBe(OTHER_LABEL);
    expect(limiter.value('a')).toBe('a');
    expect(limiter.size).toBe(2);
  });
});
