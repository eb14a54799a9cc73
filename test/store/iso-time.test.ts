import { describe, expect, it } from 'vitest';
import { epochMsOfIso, isoOfEpochMs } from '../../src/model/iso-time.js';

describe('ISO times on the recording path', () => {
  // Milliseconds around second, minute, day, month and year boundaries, in an order that
  // moves back and forth between seconds (each side remembers only the last one).
  const base = Date.UTC(2026, 11, 31, 23, 59, 59, 0);
  const times = [
    base, base + 1, base + 9, base + 10, base + 99, base + 100, base + 999, base + 1000, base + 1001,
    base - 1, base + 998, 0, 1, 999, 1000, Date.UTC(2024, 1, 29, 12, 0, 0, 5), base + 1000, base,
  ];

  it('formats as Date#toISOString does, whichever second came before', () => {
    for (const ms of times) expect(isoOfEpochMs(ms)).toBe(new Date(ms).toISOString());
  });

  it('formats years outside 0000-9999 and fractional milliseconds as Date#toISOString does', () => {
    for (const ms of [Date.UTC(12000, 0, 1, 0, 0, 0, 7), Date.UTC(-5, 0, 1), 8.64e15, base + 0.5]) {
      expect(isoOfEpochMs(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it('reads what it wrote and what Date.parse reads, whichever second came before', () => {
    for (const ms of times) expect(epochMsOfIso(new Date(ms).toISOString())).toBe(ms);
    for (const text of ['2026-11-29T06:12:03Z', '2026-11-29T07:12:03.456+01:00', '2026-11-29', '+012000-01-01T00:00:00.007Z']) {
      expect(epochMsOfIso(text)).toBe(Date.parse(text));
    }
  });

  it('never reads a string that only shares the last second’s beginning as a time of that second', () => {
    const second = '2026-11-29T06:12:03.';
    expect(epochMsOfIso(`${second}456Z`)).toBe(Date.parse(`${second}456Z`));
    for (const bad of [`${second}45xZ`, `${second}4567`, `${second}456+`, `${second}/56Z`, `${second}:56Z`]) {
      expect(epochMsOfIso(bad)).toBe(Date.parse(bad));
    }
    // Date.parse moves an impossible day to the next month: it is read so, but not remembered.
    expect(epochMsOfIso('2026-02-30T00:00:00.000Z')).toBe(Date.parse('2026-02-30T00:00:00.000Z'));
    expect(epochMsOfIso('2026-02-30T00:00:00.001Z')).toBe(Date.parse('2026-02-30T00:00:00.001Z'));
  });
});
