/**
 * Excerpts without guarded values (docs/security.md, docs/evaluators.md): the one function
 * that makes the excerpt of a text wherever one is shown (the live stream, `guardctl tui`,
 * spans with content, replay reports). It masks, as matches are masked (mask.ts), every
 * value that any masking evaluator would find in the text, whatever control the excerpt
 * belongs to and however many values there are: every `secrets` format, high-entropy
 * values assigned to secret-sounding names (at any entropy), every `pii` kind (cards and
 * any 13-19 digit number that passes Luhn, US SSNs, IBANs, e-mail addresses, international
 * phone numbers, IP addresses), and the texts the step's controls reported finding. PURE.
 */
import { maskMatch, MASK } from './mask.js';
import { digitRunsOf } from './pii/digit-runs.js';
import { scanEmails, scanIps } from './pii/network.js';
import { scanCards, scanIbans, scanLuhnNumbers, scanSsns } from './pii/numbers.js';
import { scanPhones } from './pii/phone.js';
import { asciiLower, scanHighEntropy } from './secrets/entropy.js';
import { formatsFor, scanSecrets, SECRET_KINDS } from './secrets/formats.js';
import { scanVisible } from './secrets/ignorable.js';

const ALL_FORMATS = formatsFor(SECRET_KINDS);

/**
 * Characters read past the part of the text an excerpt can show, so that a value starting
 * in that part is read whole by the scanners: more than any bounded format is long (tokens
 * of at most 512 characters, a JWT header of at most 2 KB, an e-mail address). What can be
 * longer is masked to the end of the text instead (sensitiveExcerpt).
 */
export const SCAN_MARGIN = 4096;

/** Values masked per excerpt at most; past that the rest of the text is not shown. */
const MAX_VALUES = 2_000;

/** Reports each value any masking evaluator would find in `text`; false when `report` asked to stop. */
export function scanSensitive(text: string, report: (found: string) => boolean): boolean {
  const runs = digitRunsOf(text);
  return (
    scanSecrets(text, ALL_FORMATS, (_kind, f) => report(f)) &&
    scanVisible(text, (visible, r) => scanHighEntropy(visible, asciiLower(visible), 0, r), report) &&
    scanCards(text, runs, report) &&
    scanLuhnNumbers(text, runs, report) &&
    scanSsns(text, runs, report) &&
    scanIbans(text, runs, report) &&
    scanEmails(text, report) &&
    scanPhones(text, runs, undefined, report, { unchecked: 0 }) &&
    scanIps(text, runs, report)
  );
}

export interface ExcerptOptions {
  /** Characters of excerpt at most (the cut marked with `…`). */
  max: number;
  /** Texts to mask besides what the scanners find (what the step's controls found). */
  found?: readonly string[] | null | undefined;
  /** Texts shown as they are (what a control with reveal_match found itself). */
  keep?: ReadonlySet<string> | undefined;
}

/**
 * The start of `text`, at most `max` characters, with every sensitive value masked. Masks
 * are placed on the text as written and the excerpt is cut after, so a value is either
 * whole in a mask or not shown at all: the cut never lets part of one through.
 */
export function sensitiveExcerpt(text: string, options: ExcerptOptions): string {
  const { max } = options;
  // The part of the text an excerpt may show: masks shorten what they cover, so more than
  // `max` characters of the text can fit, but never more than this.
  const shown = Math.min(text.length, max * 4);
  const found = (options.found ?? []).filter((f) => f !== '');
  const longest = found.reduce((n, f) => Math.max(n, f.length), 0);
  const window = text.length <= shown + SCAN_MARGIN ? text : text.slice(0, shown + SCAN_MARGIN);
  const values = new Set<string>(found);
  const complete = scanSensitive(window, (f) => {
    values.add(f);
    return values.size < MAX_VALUES;
  });
  const keep = options.keep;
  const ranges: Array<[number, number]> = [];
  for (const v of values) {
    if (v === '' || keep?.has(v) === true) continue;
    const within = found.includes(v) ? text.slice(0, shown + longest) : window;
    // A private key whose end is not in the scanned part is masked to the end of the text.
    const open = v.startsWith('-----BEGIN ') && !v.includes('-----END');
    for (let at = within.indexOf(v); at >= 0 && at < shown; at = within.indexOf(v, at + 1)) ranges.push([at, open ? text.length : at + v.length]);
  }
  // A value running past the scanned part (a JWT of a long payload) could not be read
  // whole: the last word that reaches the cut is masked from its start, to the end of the text.
  if (window.length < text.length) {
    let start = window.length;
    while (start > 0 && !/\s/.test(window[start - 1]!)) start--;
    if (start < shown) ranges.push([start, text.length]);
  }
  const merged = mergeRanges(ranges);
  let out = '';
  let at = 0;
  for (const [start, end] of merged) {
    if (start >= shown || out.length >= max) break;
    out += `${text.slice(at, start)}${maskMatch(text.slice(start, end))}`;
    at = end;
  }
  // A scan stopped at MAX_VALUES leaves the rest unread: nothing after the last mask is shown.
  if (complete && at < shown && out.length < max) {
    out += text.slice(at, shown);
    at = shown;
  }
  const more = at < text.length;
  if (out.length > max || (more && out.length >= max)) return `${out.slice(0, max - 1)}${MASK}`;
  return more ? `${out}${MASK}` : out;
}

/** Overlapping ranges as one, from the first start to the last end, in order; sorts `ranges`. */
export function mergeRanges(ranges: Array<[number, number]>): Array<[number, number]> {
  const merged: Array<[number, number]> = [];
  for (const [start, end] of ranges.sort((a, b) => a[0] - b[0])) {
    const last = merged.at(-1);
    if (last !== undefined && start < last[1]) last[1] = Math.max(last[1], end);
    else merged.push([start, end]);
  }
  return merged;
}
