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

  it('gives back every field of every event, each shared text sent once', () => {
    const packed = packEvents(events);
    expect(unpackEvents(structuredClone(packed))).toEqual(events);
    // Agent, stage, step type, action, evaluator and selector are the same in all three; the
    // first two share their time too.
    expect(packed.strings.filter((s) => s === 'support-bot')).toHaveLength(1);
    expect(packed.strings.filter((s) => s === '2026-11-29T06:12:03.007Z')).toHaveLength(1);
    expect(packed.values).not.toContain('support-bot');
    // Ids are never shared: each is its own value.
    expect(packed.values).toContain('exec-2');
  });

  it('refuses a batch that is not what packEvents makes', () => {
    const packed = packEvents(events);
    expect(() => unpackEvents({ strings: packed.strings, values: packed.values.slice(1) })).toThrow(/not a multiple of 21/);
    const values = packed.values.slice();
    values[3] = packed.strings.length;
    expect(() => unpackEvents({ strings: packed.strings, values })).toThrow(/no shared text/);
  });
});
