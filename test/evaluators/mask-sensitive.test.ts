/**
 * The net under messages and metadata (mask-sensitive.ts) remembers short texts it found
 * nothing in. The memo must never change an answer: a text holding a value is masked every
 * time, however often a clean text like it was seen, and a full memo starts over.
 */
import { describe, expect, it } from 'vitest';
import { maskSensitiveIn, maskSensitiveInJson } from '../../src/evaluators/mask-sensitive.js';

const CARD = '4111111111111111';

describe('maskSensitiveIn', () => {
  it('masks a value every time, after the clean text around it was remembered', () => {
    const clean = 'signals: invisible_text, exfiltration_link; score 0.9';
    for (let i = 0; i < 3; i++) expect(maskSensitiveIn(clean)).toBe(clean);
    const dirty = `${clean} ${CARD}`;
    for (let i = 0; i < 3; i++) {
      const masked = maskSensitiveIn(dirty);
      expect(masked).not.toContain(CARD);
      expect(masked.startsWith(clean)).toBe(true);
    }
  });

  it('answers the same past the memo bound, and for texts longer than it keeps', () => {
    const texts = Array.from({ length: 5000 }, (_, i) => `fixed message number ${i}`);
    const first = texts.map((t) => maskSensitiveIn(t));
    expect(first).toEqual(texts);
    const long = `${'a clean sentence. '.repeat(20)}${CARD}`;
    expect(maskSensitiveIn(long)).not.toContain(CARD);
    expect(maskSensitiveIn(long)).not.toContain(CARD);
    // A key in metadata goes through the same net.
    expect(JSON.stringify(maskSensitiveInJson({ [CARD]: 'x', note: `card ${CARD}` }))).not.toContain(CARD);
  });
});
