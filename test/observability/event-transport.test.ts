import { describe, expect, it } from 'vitest';
import { packEvents, unpackEvents } from '../../src/observability/event-transport.js';
import type { StoredEvent } from '../../src/model/index.js';
import { makeEvent } from './fixtures.js';

describe('event transport', () => {
  const events: StoredEvent[] = [
    makeEvent(0, { timestamp: '2026-11-29T06:12:03.007Z', metadata: { matched_text: '[masked]' }, set_revision: 3 }),
    makeEvent(1, { timestamp: '2026-11-29T06:12:03.007Z', evaluator_name: null, selector_path: null, selector_missing: true }),
    { ...makeEvent(2, { control_name: 'other', mode: 'shadow', error_message: 'boom' }), example: '{"input":"x"}' },
  ];

  it('gives back every field of every event, each shared text sent once, every number in one typed array', () => {
    const packed = packEvents(events);
    expect(unpackEvents(structuredClone(packed))).toEqual(events);
    // Agent, stage, step type, action, evaluator and selector are the same in all three; the
    // first two share their time and trace too.
    expect(packed.strings.filter((s) => s === 'support-bot')).toHaveLength(1);
    expect(packed.strings.filter((s) => s === '2026-11-29T06:12:03.007Z')).toHaveLength(1);
    // Ids are never shared: each is its own text.
    expect(packed.strings).toContain('exec-2');
    expect(packed.numbers).toBeInstanceOf(Float64Array);
    expect(packed.numbers).toHaveLength(3 * 21);
    expect(packed.objects).toEqual([{ matched_text: '[masked]' }]);
  });

  it('keeps null apart from absent, and false apart from both', () => {
    const nullish: StoredEvent[] = [
      { ...makeEvent(3, { set_revision: null, selector_missing: false }), example: null },
      { ...makeEvent(4, { set_revision: 0 }), example: undefined },
    ];
    delete nullish[1]!.mode;
    const back = unpackEvents(structuredClone(packEvents(nullish)));
    expect(back).toEqual(nullish);
    expect(back[0]).toMatchObject({ set_revision: null, selector_missing: false, example: null });
    expect(back[1]!.set_revision).toBe(0);
    expect(back[1]!.mode).toBeUndefined();
  });

  it('refuses a batch that is not what packEvents makes', () => {
    const packed = packEvents(events);
    expect(() => unpackEvents({ ...packed, numbers: packed.numbers.subarray(1) })).toThrow(/not a multiple of 21/);
    expect(() => unpackEvents({ ...packed, numbers: Array.from(packed.numbers) as unknown as Float64Array })).toThrow(/not a Float64Array/);
    const numbers = packed.numbers.slice();
    numbers[3] = packed.strings.length;
    expect(() => unpackEvents({ ...packed, numbers })).toThrow(/no text/);
    numbers[3] = 0.5;
    expect(() => unpackEvents({ ...packed, numbers })).toThrow(/no text/);
    const metadata = packed.numbers.slice();
    metadata[16] = 1;
    expect(() => unpackEvents({ ...packed, numbers: metadata })).toThrow(/no metadata object 1/);
  });
});
