/**
 * Scanners for the pii evaluator's e-mail addresses and IP addresses (v4 and v6). PURE
 * (no node:net: the addresses are parsed here). Each looks at every character a bounded
 * number of times, so the scans are linear in the text whatever it holds.
 */
import { joined, type DigitRuns } from './digit-runs.js';
import { isAlnum, type Report } from './numbers.js';

const isDigit = (c: number) => c >= 48 && c <= 57;
const isHex = (c: number) => isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/** RFC 5321's limits: the local part and the domain. */
const LOCAL_MAX = 64;
const DOMAIN_MAX = 253;

/** Characters of a local part as people write them (dot-atoms; quoted local parts are not counted). */
function isLocalChar(c: number): boolean {
  return isAlnum(c) || c === 46 || c === 95 || c === 37 || c === 43 || c === 45 || c === 39;
}

const isDomainChar = (c: number) => isAlnum(c) || c === 46 || c === 45;

/**
 * E-mail addresses: around each '@', a local part (no dot at either end, none doubled) and a
 * domain of at least two labels (letters, digits and inner hyphens, at most 63 each) ending
 * in a top-level domain of two or more letters. Each '@' reads at most 64 characters back
 * and 253 ahead, and the scan resumes after a found domain, so it is linear.
 */
export function scanEmails(text: string, report: Report): boolean {
  let at = text.indexOf('@');
  while (at >= 0) {
    let from = at;
    while (from > 0 && at - from < LOCAL_MAX && isLocalChar(text.charCodeAt(from - 1))) from--;
    // Dots may not start the local part; a longer run than 64 is no address.
    while (from < at && text.charCodeAt(from) === 46) from++;
    let to = at + 1;
    while (to < text.length && to - at - 1 < DOMAIN_MAX && isDomainChar(text.charCodeAt(to))) to++;
    // A sentence's full stop or a hyphen after the address is not part of it.
    while (to > at + 1 && (text.charCodeAt(to - 1) === 46 || text.charCodeAt(to - 1) === 45)) to--;
    const tooLongBack = from > 0 && isLocalChar(text.charCodeAt(from - 1));
    if (!tooLongBack && from < at && validLocal(text, from, at) && validDomain(text.slice(at + 1, to))) {
      if (!report(text.slice(from, to))) return false;
    }
    at = text.indexOf('@', Math.max(at + 1, to));
  }
  return true;
}

function validLocal(text: string, from: number, to: number): boolean {
  if (text.charCodeAt(to - 1) === 46) return false;
  for (let i = from + 1; i < to; i++) if (text.charCodeAt(i) === 46 && text.charCodeAt(i - 1) === 46) return false;
  return true;
}

function validDomain(domain: string): boolean {
  const labels = domain.split('.');
  if (labels.length < 2) return false;
  for (const label of labels) {
    if (label.length === 0 || label.length > 63) return false;
    if (label.charCodeAt(0) === 45 || label.charCodeAt(label.length - 1) === 45) return false;
  }
  const tld = labels[labels.length - 1]!;
  if (tld.length < 2) return false;
  for (let i = 0; i < tld.length; i++) if (!isLetter(tld.charCodeAt(i))) return false;
  return true;
}

/**
 * IPv4 addresses in dotted-quad form (`192.0.2.1`: four numbers 0-255, no leading zeros,
 * also before a port) and IPv6 addresses (RFC 4291 text forms: eight groups, `::` once, an
 * IPv4 tail). IPv4 candidates are four digit runs joined by dots; IPv6 candidates are read
 * around each ':' (at most the longest address either way), and the scan resumes after
 * each, so each character is read a bounded number of times.
 */
export function scanIps(text: string, runs: DigitRuns, report: Report): boolean {
  return scanIpv4(text, runs, report) && scanIpv6(text, report);
}

const isDot = (c: number) => c === 46;

function scanIpv4(text: string, runs: DigitRuns, report: Report): boolean {
  const { starts, ends } = runs;
  for (let k = 0; k + 3 < starts.length; k++) {
    if (!joined(text, runs, k, isDot) || !joined(text, runs, k + 1, isDot) || !joined(text, runs, k + 2, isDot)) continue;
    const at = starts[k]!;
    const end = ends[k + 3]!;
    // Part of a longer dotted number (`1.2.3.4.5`, `v1.2.3.4`) or an IPv6 address's tail
    // (`::ffff:192.0.2.1`, which the IPv6 scan reports); `addr:192.0.2.1` is one.
    const before = at > 0 ? text.charCodeAt(at - 1) : 32;
    if (isWordChar(before) || before === 46) continue;
    if (before === 58 && at > 1 && isV6Char(text.charCodeAt(at - 2))) continue;
    const after = end < text.length ? text.charCodeAt(end) : 32;
    if (isWordChar(after) || (after === 46 && isDigit(text.charCodeAt(end + 1)))) continue;
    const address = text.slice(at, end);
    if (!isIpv4(address)) continue;
    if (!report(address)) return false;
    k += 3;
  }
  return true;
}

const isV6Char = (c: number) => isHex(c) || c === 58 || c === 46;

function scanIpv6(text: string, report: Report): boolean {
  const n = text.length;
  let done = 0;
  let colon = text.indexOf(':');
  while (colon >= 0) {
    let start = colon;
    while (start > done && colon - start < IPV6_MAX && isV6Char(text.charCodeAt(start - 1))) start--;
    let i = colon;
    while (i < n && i - start <= IPV6_MAX && isV6Char(text.charCodeAt(i))) i++;
    if (i - start > IPV6_MAX) {
      // Longer than any address: walk it whole once and go on after it.
      while (i < n && isV6Char(text.charCodeAt(i))) i++;
      done = i;
      colon = text.indexOf(':', i);
      continue;
    }
    let end = i;
    // A full stop after an address ends the sentence.
    while (end > start && text.charCodeAt(end - 1) === 46) end--;
    done = i;
    // Inside a word (`std::vector`, `Foo::Bar`), or cut short by the bound: no address.
    const inWord = (start > 0 && (isWordChar(text.charCodeAt(start - 1)) || isV6Char(text.charCodeAt(start - 1)))) || (end === i && i < n && isWordChar(text.charCodeAt(i)));
    if (!inWord) {
      const run = text.slice(start, end);
      if (isIpv6(run) && !report(run)) return false;
    }
    colon = text.indexOf(':', i);
  }
  return true;
}

const isWordChar = (c: number) => isAlnum(c) || c === 95;

/** The longest IPv6 text: eight groups with an IPv4 tail (`ffff:…:ffff:255.255.255.255`). */
const IPV6_MAX = 45;

export function isIpv4(s: string): boolean {
  const parts = s.split('.');
  if (parts.length !== 4) return false;
  return parts.every((p) => {
    if (p.length === 0 || p.length > 3 || (p.length > 1 && p.charCodeAt(0) === 48)) return false;
    for (let k = 0; k < p.length; k++) if (!isDigit(p.charCodeAt(k))) return false;
    return Number(p) <= 255;
  });
}

export function isIpv6(s: string): boolean {
  if (s.length < 3 || s.length > IPV6_MAX) return false;
  const halves = s.split('::');
  if (halves.length > 2) return false;
  const groupsOf = (half: string): string[] | null => (half === '' ? [] : half.split(':'));
  const head = groupsOf(halves[0]!);
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
  if (head === null || tail === null) return false;
  const all = [...head, ...tail];
  let count = 0;
  for (let k = 0; k < all.length; k++) {
    const g = all[k]!;
    // An IPv4 tail (`::ffff:192.0.2.1`) counts as two groups, and only at the very end.
    if (k === all.length - 1 && g.includes('.')) {
      if (!isIpv4(g)) return false;
      count += 2;
      continue;
    }
    if (g.length === 0 || g.length > 4) return false;
    for (let j = 0; j < g.length; j++) if (!isHex(g.charCodeAt(j))) return false;
    count++;
  }
  if (halves.length === 2) return count <= 7 && count >= 1;
  return count === 8;
}
