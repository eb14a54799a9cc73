/**
 * What tells a real credential from text shaped like one, for the `secrets` evaluator:
 * the checksums some providers put in their tokens, and the placeholders documentation
 * and sample configs use (`AKIAIOSFODNN7EXAMPLE`, `ghp_xxxx…`, `${NPM_TOKEN}`). Masking
 * (sensitive.ts) and redaction by value use neither: they hide whatever has the shape. PURE.
 */

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE 802.3, as zlib computes it) of an ASCII string. */
export function crc32(text: string): number {
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) crc = CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `n` in base 62 (digits, then A-Z, then a-z), left-padded with `0` to `width`. */
export function base62(n: number, width: number): string {
  let out = '';
  let v = n;
  do {
    out = BASE62[v % 62]! + out;
    v = Math.floor(v / 62);
  } while (v > 0);
  return out.padStart(width, '0');
}

/**
 * GitHub's tokens since 2021 (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`) and npm's (`npm_`):
 * 30 random characters, then the CRC-32 of those 30 in base 62 over 6 characters
 * (github.blog, 2021-04-05 and 2021-09-23). A token failing it was never issued.
 */
export function checksumHolds(kind: string, token: string): boolean {
  if (kind === 'npm_token' || (kind === 'github_token' && token.charCodeAt(3) === 95)) return prefixedCrcHolds(token);
  return true;
}

function prefixedCrcHolds(token: string): boolean {
  const body = token.slice(4);
  if (body.length !== 36) return true;
  return base62(crc32(body.slice(0, 30)), 6) === body.slice(30);
}

/** Words that documentation and sample configs put in place of a credential. */
const PLACEHOLDER_WORDS = ['example', 'sample', 'dummy', 'placeholder', 'redacted', 'your_', 'your-', 'yourtoken', 'yourkey', 'insert', 'replace', 'changeme', 'fake', 'xxxx', '****', '....'];
/** Whole values that stand for a password in documentation (`postgres://user:password@host`). */
const PLACEHOLDER_VALUES = new Set(['password', 'passwd', 'pass', 'pwd', 'pw', 'secret', 'token', 'apikey', 'api_key']);
/**
 * Documented example keys: AWS's secret key (its key id, AKIAIOSFODNN7EXAMPLE, holds
 * "example") and the Mailchimp iOS SDK's README key.
 */
const DOCUMENTED = ['wjalrxutnfemi/k7mdeng', '3012a5754bbd716926f99c028f7ea428-us18'];
/** A unit of 2 to 4 characters repeated over this many more characters is a pattern (`123123…`, `abab…`), not a random token. */
const REPEAT_MIN = 10;
const PERIOD_MAX = 4;

/**
 * Whether `found` is a placeholder rather than a credential: it holds a placeholder word
 * or a documented example, ends with `here` (`TokenHere`), a run of 6 identical characters (`000000`, `aaaaaa`), a run of 8
 * consecutive ones (`abcdefgh`, `12345678`), a unit of 2-4 characters repeated over 10 more
 * (`123123123123`), or is a template reference (`${…}`, `{{…}}`,
 * `<…>`, `%…%`, `$NAME`). A random token holds none of these but with negligible odds.
 */
export function isPlaceholder(found: string): boolean {
  const low = found.toLowerCase();
  if (PLACEHOLDER_VALUES.has(low) || low.endsWith('here')) return true;
  for (const w of PLACEHOLDER_WORDS) if (low.includes(w)) return true;
  for (const d of DOCUMENTED) if (low.includes(d)) return true;
  const first = found.charCodeAt(0);
  if (first === 36 || first === 60 || first === 123 || first === 37) return true;
  let same = 1;
  let rising = 1;
  // repeats[p]: how many characters in a row equal the one p places before.
  const repeats = new Array<number>(PERIOD_MAX + 1).fill(0);
  for (let i = 1; i < found.length; i++) {
    const c = found.charCodeAt(i);
    const p = found.charCodeAt(i - 1);
    same = c === p ? same + 1 : 1;
    rising = c === p + 1 ? rising + 1 : 1;
    if (same >= 6 || rising >= 8) return true;
    for (let period = 2; period <= PERIOD_MAX && period <= i; period++) {
      repeats[period] = c === found.charCodeAt(i - period) ? repeats[period]! + 1 : 0;
      if (repeats[period]! >= REPEAT_MIN) return true;
    }
  }
  return false;
}

/** A run of base64 this long is key material: PEM bodies are lines of 64 (OpenSSH 70). */
const KEY_MATERIAL_MIN = 40;

/**
 * Whether a whole PEM block (its END line read) holds no key: no run of 40+ base64
 * characters between its header and footer (`…PRIVATE KEY-----\nanything\n-----END…`,
 * an empty block). A header without its END line may be cut off, so it is not judged.
 */
export function pemWithoutKey(found: string): boolean {
  const footer = found.indexOf('-----END');
  if (footer < 0) return false;
  let run = 0;
  for (let i = found.indexOf('-----', 11) + 5; i < footer; i++) {
    const c = found.charCodeAt(i);
    const b64 = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 43 || c === 47;
    run = b64 ? run + 1 : 0;
    if (run >= KEY_MATERIAL_MIN) return false;
  }
  return true;
}
