/**
 * Scanners for the pii evaluator's number kinds: payment cards, US social security numbers
 * and IBANs. PURE. Each starts from the text's digit runs (digit-runs.ts) and reads a
 * bounded number of characters around each, so it is linear in the text whatever it holds;
 * a candidate is counted only when its check passes (Luhn and the card networks' prefixes
 * and lengths, the SSA's excluded areas, groups and serials, the IBAN's mod-97 and its
 * country's length).
 */
import { joined, type DigitRuns } from './digit-runs.js';

/** Where a scanner found something: the text as written (separators included). */
export type Report = (found: string) => boolean;

const isDigit = (c: number) => c >= 48 && c <= 57;
const isUpper = (c: number) => c >= 65 && c <= 90;
const isLower = (c: number) => c >= 97 && c <= 122;
export const isAlnum = (c: number) => isDigit(c) || isUpper(c) || isLower(c);

/** Cards have 12 to 19 digits; a run of more is some other number. */
const CARD_MIN = 12;
const CARD_MAX = 19;
/** Numbers redaction masks by the Luhn check alone have 13 to 19 digits. */
const LUHN_MIN = 13;

const isCardSeparator = (c: number) => c === 32 || c === 45;

/**
 * Card numbers: groups of digits joined by single spaces or dashes (`4111 1111 1111 1111`,
 * `4111-1111-1111-1111`, `4111111111111111`), not touching another digit. In a row of
 * joined groups (`qty 2 4111 1111 1111 1111`), every span of whole consecutive groups
 * holding 12 to 19 digits is a candidate; a number written without separators is one.
 * Each group starts at most 19 digits of spans, so the scan is linear. Returns false when
 * `report` asked to stop.
 */
export function scanCards(text: string, runs: DigitRuns, report: Report): boolean {
  return scanJoinedNumbers(text, runs, report, true);
}

/**
 * Numbers of 13 to 19 digits, grouped as cards are, that pass the Luhn check whatever their
 * prefix: what step recording masks by value (cards of networks not listed here too).
 */
export function scanLuhnNumbers(text: string, runs: DigitRuns, report: Report): boolean {
  return scanJoinedNumbers(text, runs, report, false);
}

function scanJoinedNumbers(text: string, runs: DigitRuns, report: Report, cards: boolean): boolean {
  const count = runs.starts.length;
  let k = 0;
  while (k < count) {
    let last = k;
    while (last + 1 < count && joined(text, runs, last, isCardSeparator)) last++;
    if (!numbersInGroups(text, runs, k, last, report, cards)) return false;
    k = last + 1;
  }
  return true;
}

/**
 * The spans of whole groups (runs `from` to `to`) that pass, reported left to right without
 * overlap. For cards, spans are tried only from a group whose first digit some network
 * starts with (2 to 6).
 */
function numbersInGroups(text: string, runs: DigitRuns, from: number, to: number, report: Report, cards: boolean): boolean {
  const { starts, ends } = runs;
  for (let g = from; g <= to; g++) {
    const first = text.charCodeAt(starts[g]!);
    if (cards && (first < 50 || first > 54)) continue;
    let length = 0;
    for (let h = g; h <= to; h++) {
      length += ends[h]! - starts[h]!;
      if (length > CARD_MAX) break;
      if (length < (cards ? CARD_MIN : LUHN_MIN)) continue;
      // Luhn on the text as written first: it rules out nine spans in ten without a copy.
      if (!luhnValid(text, starts[g], ends[h])) continue;
      if (cards && !isCardNumber(text.slice(starts[g], ends[h]).replace(SEPARATORS, ''))) continue;
      if (!report(text.slice(starts[g], ends[h]))) return false;
      g = h;
      break;
    }
  }
  return true;
}

const SEPARATORS = /[ -]/g;

/**
 * The Luhn check (ISO/IEC 7812): every second digit from the right doubled. Reads
 * `digits` from `from` to `to`, skipping anything that is not a digit.
 */
export function luhnValid(digits: string, from = 0, to = digits.length): boolean {
  let sum = 0;
  let double = false;
  for (let i = to - 1; i >= from; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) continue;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/**
 * The networks' issuer prefixes (IIN ranges, as numbers of the given width) and the lengths
 * their cards have: Visa, Mastercard, American Express, Discover, Diners Club, JCB, UnionPay.
 */
const NETWORKS: ReadonlyArray<{ width: number; from: number; to: number; lengths: readonly number[] }> = [
  { width: 1, from: 4, to: 4, lengths: [13, 16, 19] }, // Visa
  { width: 2, from: 51, to: 55, lengths: [16] }, // Mastercard
  { width: 4, from: 2221, to: 2720, lengths: [16] }, // Mastercard 2-series
  { width: 2, from: 34, to: 34, lengths: [15] }, // American Express
  { width: 2, from: 37, to: 37, lengths: [15] },
  { width: 4, from: 6011, to: 6011, lengths: [16, 17, 18, 19] }, // Discover
  { width: 3, from: 644, to: 649, lengths: [16, 17, 18, 19] },
  { width: 2, from: 65, to: 65, lengths: [16, 17, 18, 19] },
  { width: 3, from: 300, to: 305, lengths: [14, 15, 16, 17, 18, 19] }, // Diners Club
  { width: 2, from: 36, to: 36, lengths: [14, 15, 16, 17, 18, 19] },
  { width: 2, from: 38, to: 39, lengths: [16, 17, 18, 19] },
  { width: 4, from: 3528, to: 3589, lengths: [16, 17, 18, 19] }, // JCB
  { width: 2, from: 62, to: 62, lengths: [16, 17, 18, 19] }, // UnionPay
];

/** A card number: a known network's prefix and length, and the Luhn check. */
export function isCardNumber(digits: string): boolean {
  const known = NETWORKS.some((net) => {
    const prefix = Number(digits.slice(0, net.width));
    return prefix >= net.from && prefix <= net.to && net.lengths.includes(digits.length);
  });
  return known && luhnValid(digits);
}

/**
 * US social security numbers written as the SSA prints them, `123-45-6789` or with spaces,
 * not touching another digit. A number next to it (a count, a card, a phone number, another
 * SSN) does not hide it: only a dashed one continued by another dash and digits
 * (`12-123-45-6789`, `123-45-6789-01`) is some other identifier. Nine digits written
 * together are not counted: too many other numbers (order ids, ZIP+4 codes) look like that.
 * Invalid by the SSA's rules: area 000, 666 or 900-999, group 00, serial 0000.
 */
export function scanSsns(text: string, runs: DigitRuns, report: Report): boolean {
  const { starts, ends } = runs;
  for (let k = 0; k + 2 < starts.length; k++) {
    const at = starts[k]!;
    if (ends[k]! - at !== 3 || ends[k + 1]! - starts[k + 1]! !== 2 || ends[k + 2]! - starts[k + 2]! !== 4) continue;
    const sep = text.charCodeAt(ends[k]!);
    const same = (c: number) => c === sep && isCardSeparator(c);
    if (!joined(text, runs, k, same) || !joined(text, runs, k + 1, same)) continue;
    const end = ends[k + 2]!;
    if (continuesDashed(text, at - 1, -1, sep) || continuesDashed(text, end, 1, sep)) continue;
    const area = Number(text.slice(at, at + 3));
    if (area === 0 || area === 666 || area >= 900) continue;
    if (text.slice(at + 4, at + 6) === '00' || text.slice(at + 7, at + 11) === '0000') continue;
    if (!report(text.slice(at, end))) return false;
    k += 2;
  }
  return true;
}

/** Whether the character at `at` goes on with a digit, or with a dash and a digit after a dashed number. */
function continuesDashed(text: string, at: number, step: 1 | -1, sep: number): boolean {
  if (at < 0 || at >= text.length) return false;
  const c = text.charCodeAt(at);
  if (isDigit(c)) return true;
  if (c !== 45 || sep !== 45) return false;
  const next = at + step;
  return next >= 0 && next < text.length && isDigit(text.charCodeAt(next));
}

/** IBAN lengths by country (the SWIFT IBAN registry). */
const IBAN_LENGTHS: Readonly<Record<string, number>> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BI: 27, BR: 29, BY: 28, CH: 21,
  CR: 22, CY: 28, CZ: 24, DE: 22, DJ: 27, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FK: 18, FO: 18,
  FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27, GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26,
  IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27, MD: 24,
  ME: 22, MK: 19, MN: 20, MR: 27, MT: 31, MU: 30, NI: 28, NL: 18, NO: 15, OM: 23, PK: 24, PL: 28, PS: 29,
  PT: 25, QA: 29, RO: 24, RS: 22, RU: 33, SA: 24, SC: 31, SD: 18, SE: 24, SI: 19, SK: 24, SM: 27, SO: 23,
  ST: 25, SV: 28, TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20, YE: 30,
};

/**
 * IBANs, upper or lower case, written together or in groups separated by single spaces
 * (`DE89 3704 0044 0532 0130 00`): a known country code, two check digits, exactly the
 * country's length, and the mod-97 check (ISO 13616). A candidate starts two letters before
 * a digit run and reads at most 34 characters plus its spaces, so the scan stays linear.
 */
export function scanIbans(text: string, runs: DigitRuns, report: Report): boolean {
  const { starts, ends } = runs;
  let next = 0;
  for (let k = 0; k < starts.length; k++) {
    const i = starts[k]! - 2;
    if (i < next || ends[k]! - starts[k]! < 2) continue;
    if (!isLetter(text.charCodeAt(i)) || !isLetter(text.charCodeAt(i + 1))) continue;
    if (i > 0 && isAlnum(text.charCodeAt(i - 1))) continue;
    const length = IBAN_LENGTHS[text.slice(i, i + 2).toUpperCase()];
    if (length === undefined) continue;
    const end = ibanEnd(text, i, length);
    if (end < 0) continue;
    if (!mod97Valid(text.slice(i, end).replaceAll(' ', '').toUpperCase())) continue;
    if (!report(text.slice(i, end))) return false;
    next = end;
  }
  return true;
}

const isLetter = (c: number) => isUpper(c) || isLower(c);

/** Where an IBAN of `length` characters starting at `at` ends, or -1 when the text has none there. */
function ibanEnd(text: string, at: number, length: number): number {
  let count = 0;
  let i = at;
  while (count < length) {
    if (i >= text.length) return -1;
    const c = text.charCodeAt(i);
    if (isAlnum(c)) {
      count++;
      i++;
    } else if (c === 32 && count >= 4 && i + 1 < text.length && isAlnum(text.charCodeAt(i + 1))) i++;
    else return -1;
  }
  // Longer than the country's IBANs: some other code.
  return i < text.length && isAlnum(text.charCodeAt(i)) ? -1 : i;
}

/** ISO 13616: the first four characters moved to the end, letters as 10..35, mod 97 is 1. */
export function mod97Valid(iban: string): boolean {
  const moved = iban.slice(4) + iban.slice(0, 4);
  let rest = 0;
  for (let k = 0; k < moved.length; k++) {
    const c = moved.charCodeAt(k);
    if (isDigit(c)) rest = (rest * 10 + (c - 48)) % 97;
    else if (isUpper(c)) rest = (rest * 100 + (c - 55)) % 97;
    else return false;
  }
  return rest === 1;
}
