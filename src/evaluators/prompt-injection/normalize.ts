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
  squeezed: string;
  /** The text is all ASCII: it holds no invisible or look-alike character. */
  ascii: boolean;
}

const NON_ASCII = /[\u0080-\uffff]/;
const LEET_CHARS = /[0134579@$!|]/g;
const NOT_LETTER = /[^a-z]+/g;

export function formsOf(text: string): Forms {
  // Most texts are ASCII: then NFKC, the ignorables and the homoglyphs change nothing, and
  // two native replaces make the squeezed form.
  if (!NON_ASCII.test(text)) {
    const plain = text.toLowerCase();
    return { plain, squeezed: plain.replace(LEET_CHARS, (ch) => LEET[ch]!).replace(NOT_LETTER, ''), ascii: true };
  }
  const plain = text.normalize('NFKC').toLowerCase().replace(IGNORABLES, '');
  let squeezed = '';
  for (const ch of plain) {
    const c = ch.charCodeAt(0);
    if (c >= 97 && c <= 122) squeezed += ch;
    else if (c < 128) {
      const l = LEET[ch];
      if (l !== undefined) squeezed += l;
    } else {
      const h = HOMOGLYPHS[ch];
      if (h !== undefined) squeezed += h;
    }
  }
  return { plain, squeezed, ascii: false };
}
