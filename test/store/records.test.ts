import { describe, expect, it } from 'vitest';
import { dataWithEnabled, storedDataOf } from '../../src/store/records.js';

describe('dataWithEnabled', () => {
  it('puts the enabled column back into stored text, as the last key', () => {
    const stored = storedDataOf({ description: 'd', enabled: true, selector: { path: 'input' }, action: { decision: 'deny' } } as never);
    expect(stored).not.toContain('enabled');
    const data = dataWithEnabled(stored, false);
    expect(data).toEqual({ description: 'd', selector: { path: 'input' }, action: { decision: 'deny' }, enabled: false });
    expect(Object.keys(data!).at(-1)).toBe('enabled');
  });

  it('copies data a driver already parsed instead of changing it', () => {
    const parsed = { description: 'd', action: { decision: 'log' } };
    expect(dataWithEnabled(parsed, true)).toEqual({ ...parsed, enabled: true });
    expect(parsed).not.toHaveProperty('enabled');
  });

  it('keeps null for a control without data', () => {
    expect(dataWithEnabled(null, true)).toBeNull();
    expect(dataWithEnabled(undefined, false)).toBeNull();
  });
});
