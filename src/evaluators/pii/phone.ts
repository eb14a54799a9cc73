/**
 * The pii evaluator's phone numbers. PURE. Candidates are found here in one linear pass
 * (libphonenumber-js's own text search costs about 10 µs per character on digit-heavy
 * text); each candidate, a short string, is then validated with libphonenumber-js's full
 * metadata (the number's country, length and number ranges), about 30 µs a call. To bound
 * a hostile value (thousands of candidates), at most MAX_PHONE_CHECKS candidates are
 * validated per value; the outcome says when more were left unchecked.
 */
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import type { DigitRuns } from './digit-runs.js';
import type { Report } from './numbers.js';

export { isSupportedCountry } from 'libphonenumber-js/max';
export type { CountryCode };

/** Candidates validated per value at most. */
export const MAX_PHONE_CHECKS = 64;
/** E.164 numbers have at most 15 digits; the shortest valid numbers have 7 or so. */
const MIN_DIGITS = 7;
const MAX_DIGITS = 15;

const isDigit = (c: number) => c >= 48 && c <= 57;
const isWordChar = (c: number) => isDigit(c) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
/** Between groups of a phone number: a space, a dash, a dot or a slash, once. */
const isSeparator = (c: number) => c === 32 || c === 45 || c === 46 || c === 47;

export interface PhoneScan {
  /** Candidates that were not validated because MAX_PHONE_CHECKS was reached. */
  unchecked: number;
}

/**
 * Phone numbers written internationally (`+1 415 555 2671`, `+44 20 7946 0958`) and, when
 * `region` is given, nationally as that region writes them (`(415) 555-2671` for US).
 * A candidate starts at a digit run, or at the `+` or `(` just before it (without a region,
 * only at a `+`), not inside a word or number; it runs over digit groups joined by one
 * separator (space, dash, dot, slash) or parentheses, and holds 7 to 15 digits. Each
 * character belongs to at most one candidate.
 */
export function scanPhones(text: string, runs: DigitRuns, region: CountryCode | undefined, report: Report, scan: PhoneScan): boolean {
  const n = text.length;
  let checks = 0;
  let next = 0;
  for (let k = 0; k < runs.starts.length; k++) {
    let start = runs.starts[k]!;
    if (start < next) continue;
    if (start > 0 && text.charCodeAt(start - 1) === 40) start--;
    const plus = start > 0 && text.charCodeAt(start - 1) === 43;
    if (plus) start--;
    else if (region === undefined) continue;
    if (start > 0 && (isWordChar(text.charCodeAt(start - 1)) || text.charCodeAt(start - 1) === 43)) continue;
    const { end, digits } = candidateAt(text, start);
    next = end;
    if (digits < MIN_DIGITS || digits > MAX_DIGITS) continue;
    // A number glued to a word or to more digits is something else (an id, a hash).
    if (end < n && isWordChar(text.charCodeAt(end))) continue;
    if (checks >= MAX_PHONE_CHECKS) {
      scan.unchecked++;
      continue;
    }
    checks++;
    const candidate = text.slice(start, end);
    if (!isValidPhone(candidate, region)) continue;
    if (!report(candidate)) return false;
  }
  return true;
}

/** The end of the candidate starting at `at`, and how many digits it holds (counting stops past MAX_DIGITS). */
function candidateAt(text: string, at: number): { end: number; digits: number } {
  const n = text.length;
  let i = at;
  let digits = 0;
  let end = at;
  let open = false;
  if (text.charCodeAt(i) === 43) i++;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (isDigit(c)) {
      digits++;
      end = ++i;
    } else if (c === 40 && !open) {
      open = true;
      i++;
    } else if (c === 41 && open) {
      open = false;
      i++;
      if (i < n && text.charCodeAt(i) === 32) i++;
    } else if (isSeparator(c) && i + 1 < n && (isDigit(text.charCodeAt(i + 1)) || text.charCodeAt(i + 1) === 40)) i++;
    else break;
    if (digits > MAX_DIGITS) {
      // Walk the rest of the run without counting: it is too long to be a phone number.
      while (i < n && (isDigit(text.charCodeAt(i)) || isSeparator(text.charCodeAt(i)))) i++;
      return { end: i, digits };
    }
  }
  return { end, digits };
}

function isValidPhone(candidate: string, region: CountryCode | undefined): boolean {
  try {
    const parsed = region === undefined ? parsePhoneNumberFromString(candidate) : parsePhoneNumberFromString(candidate, region);
    return parsed !== undefined && parsed.isValid();
  } catch {
    return false;
  }
}
