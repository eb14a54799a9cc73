import { describe, expect, it } from 'vitest';
import { createExampleTaker, exampleOf, MATCHED_VALUE, MAX_EXAMPLE_BYTES } from '../../src/observability/shadow-examples.js';
import { createRedactor } from '../../src/recording/redact.js';
import type { Step } from '../../src/model/index.js';

const card = '4111 1111 1111 1111';
const step: Step = {
  type: 'llm',
  name: 'chat',
  input: { messages: [{ role: 'user', content: `my card is ${card}` }], api_key: 'sk-live-123' },
  output: `Sure, ${card} is on file`,
  context: { user: 'u-7' },
};
const redactor = createRedactor([]);

describe('shadow-report examples', () => {
  it('replaces every value the control read, and redacts secret field names', () => {
    const text = exampleOf(step, ['output', 'input.messages[0].content'], redactor)!;
    expect(text).not.toContain(card);
    expect(text).not.toContain('sk-live-123');
    expect(JSON.parse(text)).toEqual({
      type: 'llm',
      name: 'chat',
      input: { messages: [{ role: 'user', content: MATCHED_VALUE }], api_key: '[REDACTED]' },
      output: MATCHED_VALUE,
      context: { user: 'u-7' },
    });
    // The step itself is untouched.
    expect(step.output).toContain(card);
  });

  it('a control reading the whole step keeps nothing of it', () => {
    expect(JSON.parse(exampleOf(step, ['*'], redactor)!)).toBe(MATCHED_VALUE);
  });

  it('applies extra redaction rules (GUARD_RECORD_REDACT) and cuts long strings', () => {
    const long: Step = { type: 'tool', name: 't', input: { note: 'x'.repeat(1000), ssn: '078-05-1120' } };
    const parsed = JSON.parse(exampleOf(long, ['name'], createRedactor(['input.ssn']))!);
    expect(parsed.name).toBe(MATCHED_VALUE);
    expect(parsed.input.ssn).toBe('[REDACTED]');
    expect(parsed.input.note).toMatch(/^x{200}… \(1000 characters\)$/);
  });

  it('keeps no example for a step too large even after cutting', () => {
    const huge: Step = { type: 'tool', name: 't', input: Array.from({ length: 2000 }, (_, i) => `item-${i}`) };
    expect(exampleOf(huge, ['output'], redactor)).toBeNull();
    expect(MAX_EXAMPLE_BYTES).toBeLessThan(JSON.stringify(huge).length);
  });

  it('keeps at most one example per control and minute', () => {
    const taker = createExampleTaker();
    const t0 = 1_700_000_000_000 - (1_700_000_000_000 % 60_000);
    expect(taker.take(1, step, ['output'], t0)).not.toBeNull();
    expect(taker.take(1, step, ['output'], t0 + 59_000)).toBeNull();
    expect(taker.take(2, step, ['output'], t0 + 59_000)).not.toBeNull();
    expect(taker.take(1, step, ['output'], t0 + 60_000)).not.toBeNull();
  });
});

/**
 * guardctl issue #34 item 5: shadow examples kept `sk_live_…` keys and JWTs in fields the
 * control did not read, and a card sent as a JSON number, although they are redacted as
 * recorded steps are (by name and by value).
 */
describe('shadow-report examples are redacted as recorded steps are', () => {
  const STRIPE = `sk_live_${'4eC39HqLyjWDarjtT1zdp7dc'}`;
  const JWT = ['eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9', 'eyJzdWIiOiIxMjM0NTY3ODkwIn0', 'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'].join('.');
  const AWS = `AKIA${'IOSFODNN7EXAMPLE'}`;
  const odd: Step = {
    type: 'tool',
    name: 'charge',
    input: { note: `use ${STRIPE} and ${AWS}`, headers: [`Bearer ${JWT}`], amount: 12, pan: 4111111111111111, text: `card ${card}` },
    output: { id: 5500005555555559 },
    context: { k: `x ${STRIPE}` },
  };

  it.each([
    ['a taker (what the server keeps)', () => createExampleTaker().take(9, odd, ['input.amount'], 0)!],
    ['a taker with extra rules', () => createExampleTaker(['input.other']).take(9, odd, ['input.amount'], 0)!],
  ])('%s keeps no key, token or card', (_label, take) => {
    const text = take();
    for (const v of [STRIPE, JWT, AWS, card, '4111111111111111', '5500005555555559']) expect(text).not.toContain(v);
    const parsed = JSON.parse(text) as { input: Record<string, unknown>; output: Record<string, unknown> };
    expect(parsed.input.amount).toBe(MATCHED_VALUE);
    expect(parsed.input.note).toBe('use sk_l…p7dc and AKIA…MPLE');
    expect(parsed.input.pan).toBe('4111…1111');
    expect(parsed.output.id).toBe('5500…5559');
  });
});
