import { describe, expect, it } from 'vitest';
import { createDefaultRegistry, piiEvaluator, type EvaluatorOutcome, type PiiKind } from '../../src/evaluators/index.js';
import { isCardNumber, luhnValid, mod97Valid } from '../../src/evaluators/pii/numbers.js';
import { isIpv4, isIpv6 } from '../../src/evaluators/pii/network.js';
import { MAX_PHONE_CHECKS } from '../../src/evaluators/pii/phone.js';
import type { ScanHint } from '../../src/evaluators/types.js';

function run(config: object, value: unknown): EvaluatorOutcome {
  return piiEvaluator.compile(config as never)(value) as EvaluatorOutcome;
}

/** What a value holds of one kind: the found texts, by the evaluator set to that kind alone. */
function findsOf(kind: PiiKind, value: unknown, extra: object = {}): string[] {
  const o = run({ kinds: [kind], ...extra }, value);
  return o.matched ? [...(o.found ?? [])] : [];
}

type Case = [kind: PiiKind, text: string, found: string[]];

const truePositives: Case[] = [
  ['credit_card', 'card 4111111111111111 please', ['4111111111111111']],
  ['credit_card', 'card 4111 1111 1111 1111.', ['4111 1111 1111 1111']],
  ['credit_card', 'card 4111-1111-1111-1111', ['4111-1111-1111-1111']],
  ['credit_card', 'amex 3782 822463 10005', ['3782 822463 10005']],
  ['credit_card', 'mc 5555555555554444, discover 6011111111111117', ['5555555555554444', '6011111111111117']],
  ['credit_card', 'jcb 3530111333300000 diners 30569309025904 mc2 2223003122003222', ['3530111333300000', '30569309025904', '2223003122003222']],
  // Bypass attempts: inside JSON and URLs, after another number in the same run, glued to a word.
  ['credit_card', '{"card":"4111111111111111"}', ['4111111111111111']],
  ['credit_card', 'https://pay.example/charge?pan=4111111111111111&x=1', ['4111111111111111']],
  ['credit_card', 'qty 2 4111 1111 1111 1111', ['4111 1111 1111 1111']],
  ['credit_card', 'card4111111111111111', ['4111111111111111']],
  ['us_ssn', 'ssn 123-45-6789', ['123-45-6789']],
  ['us_ssn', '{"ssn":"078 05 1120"}', ['078 05 1120']],
  ['iban', 'pay to DE89 3704 0044 0532 0130 00 today', ['DE89 3704 0044 0532 0130 00']],
  ['iban', 'DE89370400440532013000', ['DE89370400440532013000']],
  ['iban', 'lower case: gb82 west 1234 5698 7654 32', ['gb82 west 1234 5698 7654 32']],
  ['iban', '{"iban":"GB82WEST12345698765432"}', ['GB82WEST12345698765432']],
  ['email', 'write to Jane.Doe+tag@mail.example.co.uk.', ['Jane.Doe+tag@mail.example.co.uk']],
  ['email', '{"to":"a@b.io"}', ['a@b.io']],
  ['email', 'mailto:x_y@example.com?subject=hi', ['x_y@example.com']],
  ['ip_address', 'from 192.168.1.1 and 10.0.0.255:8080.', ['192.168.1.1', '10.0.0.255']],
  ['ip_address', 'v6 2001:db8::1 and ::1 and fe80::1ff:fe23:4567:890a', ['2001:db8::1', '::1', 'fe80::1ff:fe23:4567:890a']],
  ['ip_address', 'full 2001:0db8:85a3:0000:0000:8a2e:0370:7334 mapped ::ffff:192.0.2.128', ['2001:0db8:85a3:0000:0000:8a2e:0370:7334', '::ffff:192.0.2.128']],
  ['ip_address', '{"addr":"10.1.2.3","log":"peer:172.16.0.9"}', ['10.1.2.3', '172.16.0.9']],
  ['phone', 'call +1 415 555 2671 or +44 20 7946 0958', ['+1 415 555 2671', '+44 20 7946 0958']],
  ['phone', '{"phone":"+14155552671"}', ['+14155552671']],
];

const nearMisses: Array<[kind: PiiKind, text: string]> = [
  ['credit_card', 'card 4111 1111 1111 1112'], // Luhn fails
  ['credit_card', 'order 1234567890123456'], // Luhn fails
  ['credit_card', 'order 4111111111111111111111'], // too long a number
  ['credit_card', 'phone 0049 3012 3456 78'], // no network starts with 00
  ['credit_card', 'id 9111111111111110'], // Luhn-valid 16 digits, no network
  ['us_ssn', 'ssn 666-12-3456'],
  ['us_ssn', 'ssn 000-12-3456'],
  ['us_ssn', 'ssn 912-12-3456'],
  ['us_ssn', 'ssn 123-00-4567'],
  ['us_ssn', 'ssn 123-45-0000'],
  ['us_ssn', 'mixed 123-45 6789'],
  ['us_ssn', 'longer 1123-45-6789'],
  ['us_ssn', 'plain 123456789'],
  ['iban', 'bad check DE88 3704 0044 0532 0130 00'],
  ['iban', 'too short DE89 3704 0044 0532 0130 0'],
  ['iban', 'unknown country ZZ89 3704 0044 0532 0130 00'],
  ['email', 'user@localhost'],
  ['email', 'at @example.com'],
  ['email', 'a..b@example.com'],
  ['email', 'x@example.c0m'],
  ['ip_address', 'bad 256.1.1.1 and 1.2.3 and 01.2.3.4'],
  ['ip_address', 'version v1.2.3.4 and 1.2.3.4.5'],
  ['ip_address', 'std::vector Foo::Bar 12:30:45 00:1a:2b:3c:4d:5e 1:2:3:4:5:6:7:8:9'],
  ['phone', 'fake +1 111 555 2671'],
  ['phone', 'national (415) 555-2671 without a region'],
];

describe('pii: true positives', () => {
  it.each(truePositives)('%s in %j', (kind, text, found) => {
    expect(findsOf(kind, text)).toEqual(found);
  });

  it('national phone numbers count with phone_region', () => {
    expect(findsOf('phone', 'call (415) 555-2671 today', { phone_region: 'US' })).toEqual(['(415) 555-2671']);
    expect(findsOf('phone', 'call 415.555.2671', { phone_region: 'US' })).toEqual(['415.555.2671']);
  });
});

describe('pii: near misses do not match', () => {
  it.each(nearMisses)('%s: %j', (kind, text) => {
    expect(findsOf(kind, text)).toEqual([]);
  });
});

describe('pii: the checks themselves', () => {
  it('Luhn, networks and mod-97', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect(luhnValid('9111111111111110')).toBe(true);
    expect(isCardNumber('9111111111111110')).toBe(false);
    expect(mod97Valid('DE89370400440532013000')).toBe(true);
    expect(mod97Valid('DE88370400440532013000')).toBe(false);
  });

  it('IP address forms', () => {
    for (const ok of ['0.0.0.0', '255.255.255.255']) expect(isIpv4(ok)).toBe(true);
    for (const bad of ['255.255.255.256', '1.2.3.04', '1..2.3']) expect(isIpv4(bad)).toBe(false);
    for (const ok of ['::1', '1::', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:1.2.3.4', '::ffff:1.2.3.4']) expect(isIpv6(ok)).toBe(true);
    for (const bad of ['1:2:3:4:5:6:7', '1::2::3', '12345::1', '1:2:3:4:5:6:7:8:9', '::1.2.3.4.5', ':::']) expect(isIpv6(bad)).toBe(false);
  });
});

describe('pii: the outcome', () => {
  it('gives kinds and counts, never the values, in message and metadata', () => {
    const o = run({}, 'card 4111 1111 1111 1111, mail a@example.com and b@example.org');
    expect(o.matched).toBe(true);
    expect(o.message).toBe('found email (2), credit_card (1)');
    expect(o.metadata).toEqual({ counts: { email: 2, credit_card: 1 }, total: 3 });
    expect(JSON.stringify([o.message, o.metadata])).not.toMatch(/4111|example/);
    expect(o.found).toEqual(['a@example.com', 'b@example.org', '4111 1111 1111 1111']);
  });

  it('min_count counts findings of all kinds together', () => {
    expect(run({ min_count: 2 }, 'a@example.com').matched).toBe(false);
    expect(run({ min_count: 2 }, 'a@example.com 192.0.2.1').matched).toBe(true);
  });

  it('kinds limit what is looked for', () => {
    expect(run({ kinds: ['email'] }, 'card 4111111111111111').matched).toBe(false);
    expect(run({ kinds: ['credit_card'] }, 'card 4111111111111111').matched).toBe(true);
  });

  it('non-string values are searched as JSON', () => {
    expect(run({ kinds: ['credit_card'] }, { nested: { pan: 4111111111111111 } }).matched).toBe(true);
    expect(run({}, null).matched).toBe(false);
  });

  it('declares a scan hint that holds: "@" for e-mail, digits for the rest', () => {
    const email = piiEvaluator.compile({ kinds: ['email'] }) as ScanHint;
    expect(email.scanPrefilter).toEqual({ literals: ['@'], folded: false });
    const cards = piiEvaluator.compile({ kinds: ['credit_card'] }) as ScanHint;
    expect(cards.scanPrefilter?.literals).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    expect(run({ kinds: ['ip_address'] }, 'fe::ab').matched).toBe(true);
  });
});

describe('pii: config errors', () => {
  const registry = createDefaultRegistry();
  it('refuses an unknown kind with its field path', () => {
    const issues = registry.validateConfig('pii', { kinds: ['email', 'passport'] });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.field).toBe('evaluator.config.kinds[1]');
    expect(issues[0]!.message).toMatch(/email/);
  });
  it('refuses a bad min_count, an unknown region and unknown keys', () => {
    expect(registry.validateConfig('pii', { min_count: 0 })[0]!.field).toBe('evaluator.config.min_count');
    expect(registry.validateConfig('pii', { phone_region: 'XX' })[0]!.field).toBe('evaluator.config.phone_region');
    expect(registry.validateConfig('pii', { kind: ['email'] })[0]!.field).toMatch(/^evaluator\.config/);
    expect(registry.validateConfig('pii', {})).toEqual([]);
  });
});

describe('pii: hostile input stays linear and bounded', () => {
  // No timing assertions: each of these would take seconds or more with a backtracking
  // scan; they must finish (the suite's timeout) and answer correctly.
  const big = 100_000;
  it.each([
    ['digits', '1'.repeat(big)],
    ['digits and spaces', '12 '.repeat(big / 3)],
    ['plus signs', '+1 2 '.repeat(big / 5)],
    ['parentheses', '(1'.repeat(big / 2)],
    ['at signs', '@'.repeat(big)],
    ['dotted local parts', `${'a.'.repeat(big / 2)}@`],
    ['hex and colons', '1:'.repeat(big / 2)],
    ['dotted numbers', '1.'.repeat(big / 2)],
    ['letters and digits', 'DE89'.repeat(big / 4)],
    ['dashes', '123-45-'.repeat(big / 7)],
  ])('%s (100 KB)', (_name, text) => {
    const o = run({ phone_region: 'US' }, text);
    expect(typeof o.matched).toBe('boolean');
  });

  it('validates at most MAX_PHONE_CHECKS phone candidates and says how many it left', () => {
    const text = Array.from({ length: MAX_PHONE_CHECKS + 10 }, () => '+1 111 555 2671').join(', ');
    const o = run({ kinds: ['phone', 'email'] }, `${text} a@example.com`);
    expect(o.matched).toBe(true);
    expect(o.metadata).toMatchObject({ counts: { email: 1 }, phone_unchecked: 10 });
  });

  it('stops counting at 100 findings', () => {
    const o = run({ kinds: ['email'] }, 'a@example.com '.repeat(500));
    expect(o.found).toHaveLength(100);
    expect(o.message).toBe('found email (100+)');
    expect(o.metadata).toMatchObject({ truncated: true });
  });
});

/**
 * guardctl issue #34 item 9: an SSN right after another number (a count, a card, a phone
 * number, another SSN) was not found, with `kinds: [credit_card, us_ssn]` as with us_ssn
 * alone: the whole text was allowed while the same SSN alone was denied.
 */
describe('pii: SSNs next to other numbers', () => {
  const SSN_CASES: Array<[string, string, string[]]> = [
    ['three in a row', 'Employees: 219-09-9999 219-09-9998 219-09-9997', ['219-09-9999', '219-09-9998', '219-09-9997']],
    ['after a count', 'ticket 12 219-09-9999', ['219-09-9999']],
    ['after a card', 'card 4111 1111 1111 1111 219-09-9999', ['219-09-9999']],
    ['after a card written together', '4111111111111111 219-09-9999', ['219-09-9999']],
    ['after an international phone number', 'call +1 415 555 2671 219-09-9999', ['219-09-9999']],
    ['before a number', '219-09-9999 12 items', ['219-09-9999']],
    ['separated by commas', '219-09-9999,219-09-9998', ['219-09-9999', '219-09-9998']],
    ['separated by a comma and a space', '219-09-9999, 219-09-9998', ['219-09-9999', '219-09-9998']],
    ['separated by newlines', '219-09-9999\n219-09-9998\r\n219-09-9997', ['219-09-9999', '219-09-9998', '219-09-9997']],
    ['separated by tabs', '1\t219-09-9999\t2', ['219-09-9999']],
    ['at the start and end of the string', '219-09-9999', ['219-09-9999']],
    ['written with spaces after a count', 'ticket 12 219 09 9999', ['219 09 9999']],
    ['written with spaces, two in a row', '219 09 9999 219 09 9998', ['219 09 9999', '219 09 9998']],
    ['in a JSON array', '["219-09-9999","219-09-9998"]', ['219-09-9999', '219-09-9998']],
  ];
  it.each(SSN_CASES)('%s: %j', (_label, text, found) => {
    expect(findsOf('us_ssn', text)).toEqual(found);
    const both = run({ kinds: ['credit_card', 'us_ssn'] }, text);
    expect(both.matched).toBe(true);
    for (const f of found) expect(both.found).toContain(f);
  });

  it.each([
    ['a longer dashed identifier', 'id 12-219-09-9999'],
    ['a dashed identifier going on', 'id 219-09-9999-01'],
    ['glued to digits', 'x1219-09-99990'],
  ])('%s is not an SSN: %j', (_label, text) => {
    expect(findsOf('us_ssn', text)).toEqual([]);
  });
});
