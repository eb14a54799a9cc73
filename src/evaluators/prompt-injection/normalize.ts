/**
 * The forms of a text the injection signals read, each built in one pass. PURE.
 * - `plain`: NFKC (fullwidth and styled letters to ASCII), lowercased, default-ignorable
 *   code points (zero-width, tags, bidi controls) removed: markers are read in it.
 * - `squeezed`: only letters, after homoglyphs and digit spellings are mapped to the
 *   Latin letters they imitate (`іgn0re` is `ignore`), every space, punctuation mark and
 *   invisible character dropped: `i g n o r e`, `ig-nore` and `ig\u200bnore` all read
 *   `ignore`. Phrases are matched in it.
 */

const IGNORABLES = /\p{Default_Ignorable_Code_Point}+/gu;

/** Letters of other scripts that look like Latin ones, lowercase (the text is lowercased first). */
const HOMOGLYPHS: Readonly<Record<string, string>> = {
  // Cyrillic
  а: 'a', в: 'b', е: 'e', ё: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x',
  і: 'i', ї: 'i', ј: 'j', ѕ: 's', ԁ: 'd', һ: 'h', ӏ: 'l', ԛ: 'q', ԝ: 'w', ɡ: 'g',
  // Greek
  α: 'a', β: 'b', ε: 'e', η: 'n', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', ω: 'w',
  // Latin look-alikes outside a-z
  ı: 'i', ȷ: 'j', ſ: 's', ℓ: 'l',
};

/** Digits and signs written for letters (`1gn0r3`, `@dm1n`, `$y$tem`). */
const LEET: Readonly<Record<string, string>> = { '0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '@': 'a', $: 's', '!': 'i', '|': 'l' };

export interface Forms {
  plain: string;
  /** The squeezed form as bytes (a-z only): the phrase patterns search it with RE2 (phrases.ts). */
  squeezed: Buffer;
  /** The text is all ASCII: it holds no invisible or look-alike character. */
  ascii: boolean;
}

/** Per ASCII code (0 from 128 on), the letter the squeezed form keeps for it (lowercased, or the letter a digit stands for); 0: dropped. */
const SQUEEZE = (() => {
  const table = new Uint8Array(256);
  for (let c = 97; c <= 122; c++) table[c] = c;
  for (let c = 65; c <= 90; c++) table[c] = c + 32;
  for (const [sign, letter] of Object.entries(LEET)) table[sign.charCodeAt(0)] = letter.charCodeAt(0);
  return table;
})();
const HOMOGLYPH_CODES: ReadonlyMap<number, number> = new Map(Object.entries(HOMOGLYPHS).map(([ch, letter]) => [ch.charCodeAt(0), letter.charCodeAt(0)]));

/** The forms of `text`; `bytes` is its UTF-8 encoding, when the caller has it. */
export function formsOf(text: string, bytes: Buffer = Buffer.from(text, 'utf8')): Forms {
  // Most texts are ASCII (then the UTF-8 bytes are as many as the characters): NFKC, the
  // ignorables and the homoglyphs change nothing, and one pass through a table over the
  // bytes makes the squeezed form, as bytes for RE2 (phrases in index.ts). With the RE2 set:
  // -50% CPU per check on a 2 KB answer, -45% on a 2 KB injected page.
  if (bytes.length !== text.length) return formsOfUnicode(text);
  const squeezed = Buffer.allocUnsafe(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const letter = SQUEEZE[bytes[i]!]!;
    if (letter !== 0) squeezed[n++] = letter;
  }
  return { plain: text.toLowerCase(), squeezed: squeezed.subarray(0, n), ascii: true };
}

function formsOfUnicode(text: string): Forms {
  const plain = text.normalize('NFKC').toLowerCase().replace(IGNORABLES, '');
  // Every character gives at most one letter (a surrogate half is in no table: dropped).
  const squeezed = Buffer.allocUnsafe(plain.length);
  let n = 0;
  for (let i = 0; i < plain.length; i++) {
    const c = plain.charCodeAt(i);
    const letter = c < 128 ? SQUEEZE[c]! : (HOMOGLYPH_CODES.get(c) ?? 0);
    if (letter !== 0) squeezed[n++] = letter;
  }
  return { plain, squeezed: squeezed.subarray(0, n), ascii: false };
}
