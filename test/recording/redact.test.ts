import { describe, expect, it } from 'vitest';
import { createRedactor, REDACTED } from '../../src/recording/index.js';

describe('createRedactor', () => {
  it('redacts the built-in secret names at any depth, in arrays too, case- and dash-insensitively', () => {
    const step = {
      type: 'tool',
      name: 'login',
      input: { user: 'ann', Password: 'hunter2', nested: { 'API-Key': 'k', list: [{ token: 't', keep: 1 }] } },
      context: { authorization: 'Bearer x' },
    };
    expect(createRedactor([]).redact(step)).toEqual({
      type: 'tool',
      name: 'login',
      input: { user: 'ann', Password: REDACTED, nested: { 'API-Key': REDACTED, list: [{ token: REDACTED, keep: 1 }] } },
      context: { authorization: REDACTED },
    });
  });

  it('adds configured names and exact paths; a path redacts only that field', () => {
    const r = createRedactor(['ssn', 'input.card_number']);
    const step = { input: { card_number: '4111', ssn: '1', deep: { card_number: 'kept', ssn: '2' } }, output: { card_number: 'kept' } };
    expect(r.redact(step)).toEqual({
      input: { card_number: REDACTED, ssn: REDACTED, deep: { card_number: 'kept', ssn: REDACTED } },
      output: { card_number: 'kept' },
    });
  });

  it('redacts whole objects under a secret name and leaves the input untouched', () => {
    const step = { input: { secret: { a: 1 } } };
    const copy = structuredClone(step);
    expect(createRedactor([]).redact(step)).toEqual({ input: { secret: REDACTED } });
    expect(step).toEqual(copy);
  });

  it('passes scalars and strings through (only fields are redacted)', () => {
    const r = createRedactor([]);
    expect(r.redact('password=1')).toBe('password=1');
    expect(r.redact(null)).toBeNull();
  });
});
