import { describe, expect, it } from 'vitest';
import { createRedactor, isSecretName, maskSecretsIn, REDACTED } from '../../src/recording/index.js';

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
    const r = createRedactor(['ssn', 'input.account_ref']);
    const step = { input: { account_ref: 'A1', ssn: '1', deep: { account_ref: 'kept', ssn: '2' } }, output: { account_ref: 'kept' } };
    expect(r.redact(step)).toEqual({
      input: { account_ref: REDACTED, ssn: REDACTED, deep: { account_ref: 'kept', ssn: REDACTED } },
      output: { account_ref: 'kept' },
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

  it.each([
    'db_password',
    'aws_secret_access_key',
    'x-api-key',
    'secretKey',
    'bearer_token',
    'credentials',
    'pass',
    'DB-PASSWORD',
    'X_Api_Key',
    'APIKey',
    'password2',
    'aws_access_key_id',
    'sessionId',
    'Set-Cookie',
    'basic.auth',
  ])('reads %j as a secret name', (name) => {
    expect(isSecretName(name)).toBe(true);
  });

  it.each(['passenger', 'author', 'max_tokens', 'keyboard', 'primary_key', 'passage', 'user_name', 'monkey'])(
    'leaves %j alone',
    (name) => {
      expect(isSecretName(name)).toBe(false);
    },
  );

  it('redacts the fields of the review by pattern, nested and in arrays', () => {
    const step = {
      input: {
        db_password: 'p1',
        aws_secret_access_key: 'wJalrXUtnFEMI',
        headers: { 'x-api-key': 'k1', Accept: 'json' },
        config: { secretKey: 's1', bearer_token: 't1' },
        credentials: { user: 'ann', pass: 'p2' },
        list: [{ 'DB-Password': 'p3', id: 7 }],
      },
    };
    expect(createRedactor([]).redact(step)).toEqual({
      input: {
        db_password: REDACTED,
        aws_secret_access_key: REDACTED,
        headers: { 'x-api-key': REDACTED, Accept: 'json' },
        config: { secretKey: REDACTED, bearer_token: REDACTED },
        credentials: REDACTED,
        list: [{ 'DB-Password': REDACTED, id: 7 }],
      },
    });
    // credentials.pass on its own, under a name that says nothing.
    expect(createRedactor([]).redact({ login: { user: 'ann', pass: 'p2' } })).toEqual({ login: { user: 'ann', pass: REDACTED } });
  });

  it('compares configured rules by words too', () => {
    const r = createRedactor(['accountNumber', 'input.billing-info.iban']);
    expect(r.redact({ input: { 'account-number': '1', billing_info: { IBAN: 'DE89', bic: 'x' } } })).toEqual({
      input: { 'account-number': REDACTED, billing_info: { IBAN: REDACTED, bic: 'x' } },
    });
  });

  it('takes a value check that redacts strings whatever their field', () => {
    const r = createRedactor([], { sensitiveValue: (v) => v.startsWith('AKIA') });
    expect(r.redact({ input: { note: 'AKIAIOSFODNN7EXAMPLE', other: 'fine', list: ['AKIA0', 3] } })).toEqual({
      input: { note: REDACTED, other: 'fine', list: [REDACTED, 3] },
    });
  });
  it('masks credentials and Luhn-valid card numbers inside strings, whatever the field (maskValue)', () => {
    const r = createRedactor([], { maskValue: maskSecretsIn });
    const jwt = `${Buffer.from('{"alg":"HS256"}').toString('base64url')}.${Buffer.from('{"sub":"1"}').toString('base64url')}.sig_part`;
    expect(
      r.redact({
        input: { note: 'use AKIAIOSFODNN7EXAMPLE now', card: 'x 4000-0000-0000-0002 y', order: '1234567890123456', list: [jwt, 7], plain: 'fine' },
      }),
    ).toEqual({
      input: { note: 'use AKIA…MPLE now', card: 'x 4000…0002 y', order: '1234567890123456', list: ['eyJh…part', 7], plain: 'fine' },
    });
  });

  it('replaces a string with more than 1,000 secrets whole', () => {
    expect(maskSecretsIn('AKIAIOSFODNN7EXAMPLE '.repeat(1001))).toBe(REDACTED);
    expect(maskSecretsIn('AKIAIOSFODNN7EXAMPLE '.repeat(3))).toBe('AKIA…MPLE AKIA…MPLE AKIA…MPLE ');
  });
});

describe('keys redacted by value', () => {
  const AWS = `AKIA${'IOSFODNN7EXAMPLE'}`;
  it('masks keys that are card numbers or secrets and keeps masked keys unique', async () => {
    const { stepRedactor } = await import('../../src/recording/value-masks.js');
    const out = stepRedactor([]).redact({ '4111111111111111': 1, '4111200000081111': 2, [AWS]: { '5500005555555559': [{ [`x ${AWS}`]: 3 }] }, plain: 4 }) as Record<string, unknown>;
    const text = JSON.stringify(out);
    for (const leak of ['4111111111111111', '4111200000081111', '5500005555555559', AWS]) expect(text).not.toContain(leak);
    expect(Object.keys(out)).toHaveLength(4);
    expect(out['4111…1111']).toBe(1);
    expect(out['plain']).toBe(4);
    expect(out['AKIA…MPLE']).toEqual({ '5500…5559': [{ 'x AKIA…MPLE': 3 }] });
  });

  it('a key named __proto__ stays a key', async () => {
    const { stepRedactor } = await import('../../src/recording/value-masks.js');
    const out = stepRedactor([]).redact(JSON.parse('{"__proto__": {"a": 1}}')) as Record<string, unknown>;
    expect(Object.keys(out)).toEqual(['__proto__']);
  });
});
