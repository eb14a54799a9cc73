/**
 * The documented formats of cloud and SaaS credentials, for the `secrets` evaluator and for
 * redaction by value (recording/). PURE. Every format starts with a literal prefix: a scan
 * finds each prefix (or a prefix several formats share) with indexOf, reads the token after
 * it (bounded, or walked to its end once), and resumes after what it read, so it is linear
 * in the text.
 */
import { hasIgnorable, visibleOf } from './ignorable.js';

import { CONFIG_FORMATS, CONFIG_KINDS } from './config-forms.js';
import { PROVIDER_FORMATS, PROVIDER_KINDS } from './providers.js';
import { after, exact, isAlnum, isB64Url, isDigit, isUpperNum, isWord, runEnd, token, type FormatOf, type ReadResult, type Reader, type ScanState } from './readers.js';

const CORE_KINDS = [
  'aws_access_key',
  'github_token',
  'gitlab_token',
  'slack_token',
  'slack_webhook',
  'stripe_key',
  'openai_key',
  'anthropic_key',
  'google_api_key',
  'npm_token',
  'jwt',
  'private_key',
] as const;

/** Every kind, the core ones first: what `kinds` may name. */
export const SECRET_KINDS = [...CORE_KINDS, ...PROVIDER_KINDS, ...CONFIG_KINDS] as const;
export type SecretKind = (typeof SECRET_KINDS)[number];

/** Where a scan found something; false asks it to stop. */
export type Report = (found: string, at: number) => boolean;

export type Format = FormatOf<SecretKind>;

const isSlackChar = (c: number) => isAlnum(c) || c === 45;
const isGitlabChar = (c: number) => isB64Url(c) || c === 46;

/** `hooks.slack.com/services/T…/B…/…`: three path parts of letters and digits, the last 16+. */
const readWebhook: Reader = (text, _at, after) => {
  let i = after;
  for (let part = 0; part < 3; part++) {
    const end = runEnd(text, i, isAlnum);
    const length = end - i;
    if (length < (part === 2 ? 16 : 6) || length > 64) return { end: -1, next: Math.max(end, after) };
    i = end;
    if (part < 2) {
      if (text.charCodeAt(i) !== 47) return { end: -1, next: i };
      i++;
    }
  }
  return { end: i, next: i };
};

/** Digit groups a Slack token holds at most before its last part. */
const SLACK_GROUPS_MAX = 8;

/**
 * Slack's bot, user, app, refresh and session tokens: groups of digits (team, user and
 * token ids; one of 5+ digits), each followed by `-`, then 10+ letters or digits that end
 * the token (`xoxb-<team>-<bot>-<24>`, `xoxp-<team>-<user>-<id>-<32 hex>`).
 */
const readSlackClassic: Reader = (text, _at, after) => {
  let i = after;
  let groups = 0;
  let longGroup = false;
  while (groups < SLACK_GROUPS_MAX) {
    const end = runEnd(text, i, isDigit);
    if (end === i || text.charCodeAt(end) !== 45) break;
    longGroup ||= end - i >= 5;
    groups++;
    i = end + 1;
  }
  const end = runEnd(text, i, isAlnum);
  const ok = groups > 0 && longGroup && end - i >= 10 && end - i <= 255 && !isSlackChar(text.charCodeAt(end));
  return { end: ok ? end : -1, next: Math.max(end, after) };
};

/**
 * `-----BEGIN … PRIVATE KEY-----` (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP … BLOCK): the block
 * up to its `-----END …-----` line when one follows within 64 KB, else the header alone.
 */
const readPem: Reader = (text, _at, after, scan) => {
    const close = text.indexOf('-----', after);
    if (close < 0 || close - after > 40) return { end: -1, next: after };
    const label = text.slice(after, close);
    if (!/^[A-Z0-9 ]*PRIVATE KEY( BLOCK)?$/.test(label)) return { end: -1, next: after };
    const header = close + 5;
    if (scan.pemEndAt < header) scan.pemEndAt = text.indexOf('-----END', header);
    if (scan.pemEndAt === -1) scan.pemEndAt = text.length + 1;
    if (scan.pemEndAt > text.length || scan.pemEndAt - header > 65_536) return { end: header, next: header };
    const footer = text.indexOf('-----', scan.pemEndAt + 8);
    const end = footer < 0 || footer - scan.pemEndAt > 64 ? header : footer + 5;
    return { end, next: end };
};

/**
 * How base64url writes the start of a JSON object: `{"` is `eyJ`, `{ ` is `eyA`, and `{`
 * before a newline, a carriage return or a tab is `ewo`, `ew0`, `ewk`.
 */
const readJwtOrNot: Reader = (text, at, afterPrefix, scan) => {
  const c = text.charCodeAt(afterPrefix);
  if (afterPrefix - at === 2 && c !== 111 && c !== 48 && c !== 107) return { end: -1, next: afterPrefix };
  return readJwt(text, at, afterPrefix, scan);
};
/** A JWT header longer than this is not decoded. */
const JWT_HEADER_MAX = 2048;

/** A JWT's payload longer than this is not decoded (an unsigned token's payload is, to tell it from other text). */
const JWT_PAYLOAD_MAX = 65_536;

/**
 * Three base64url parts joined by dots, whose first decodes to a JSON object with a string
 * `alg`; or, unsigned, the first two alone when the second decodes to a JSON object too.
 */
const readJwt: Reader = (text, at) => {
  const headerEnd = runEnd(text, at, isB64Url);
  if (text.charCodeAt(headerEnd) !== 46 || headerEnd - at > JWT_HEADER_MAX) return { end: -1, next: headerEnd };
  const payloadEnd = runEnd(text, headerEnd + 1, isB64Url);
  if (payloadEnd === headerEnd + 1) return { end: -1, next: payloadEnd };
  if (text.charCodeAt(payloadEnd) !== 46) {
    const unsigned = payloadEnd - headerEnd <= JWT_PAYLOAD_MAX && headerHasAlg(text.slice(at, headerEnd)) && decodesToObject(text.slice(headerEnd + 1, payloadEnd));
    return { end: unsigned ? payloadEnd : -1, next: payloadEnd };
  }
  const signatureEnd = runEnd(text, payloadEnd + 1, isB64Url);
  if (!headerHasAlg(text.slice(at, headerEnd))) return { end: -1, next: signatureEnd };
  return { end: signatureEnd, next: signatureEnd };
};

/** The JSON object a base64url part decodes to; null when it decodes to anything else. */
function jsonObjectOf(part: string): Record<string, unknown> | null {
  try {
    const decoded: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof decoded === 'object' && decoded !== null && !Array.isArray(decoded) ? (decoded as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const headerHasAlg = (header: string) => typeof jsonObjectOf(header)?.alg === 'string';
const decodesToObject = (payload: string) => jsonObjectOf(payload) !== null;

/** `sk-…` and `sk-proj-…` (OpenAI): 32 or more base64url characters; `sk-ant-` is Anthropic's. */
const openAiToken = token(isB64Url, 32);
function openAiReader(text: string, at: number, after: number, scan: ScanState): ReadResult {
  return text.startsWith('ant-', after) ? { end: -1, next: after } : openAiToken(text, at, after, scan);
}

const FORMATS: readonly Format[] = Object.freeze([
    { kind: 'aws_access_key', prefixes: ['AKIA', 'ASIA', 'ABIA', 'ACCA'], boundary: true, read: exact(isUpperNum, 16, isAlnum) },
    { kind: 'github_token', prefixes: ['gh'], boundary: true, read: after(['p_', 'o_', 'u_', 's_', 'r_'], exact(isAlnum, 36)) },
    { kind: 'github_token', prefixes: ['github_pat_'], boundary: true, read: token(isWord, 50, 255) },
    { kind: 'gitlab_token', prefixes: ['glpat-', 'gldt-', 'glrt-', 'glcbt-', 'glft-', 'glsoat-'], boundary: true, read: trimDots(token(isGitlabChar, 20, 255)) },
    // Generated at a fixed length (GitLab's token overview): incoming mail, pipeline trigger,
    // OAuth application secret; agent tokens are 50+, runner registration tokens 20-50.
    { kind: 'gitlab_token', prefixes: ['glimt-'], boundary: true, read: exact(isB64Url, 25) },
    { kind: 'gitlab_token', prefixes: ['glptt-'], boundary: true, read: exact(isB64Url, 40) },
    { kind: 'gitlab_token', prefixes: ['gloas-'], boundary: true, read: exact(isB64Url, 64) },
    { kind: 'gitlab_token', prefixes: ['glagent-'], boundary: true, read: token(isB64Url, 50, 1024) },
    { kind: 'gitlab_token', prefixes: ['GR1348941'], boundary: true, read: token(isB64Url, 20, 50) },
    { kind: 'slack_token', prefixes: ['xox'], boundary: true, read: after(['b-', 'a-', 'p-', 'r-', 's-'], readSlackClassic) },
    { kind: 'slack_token', prefixes: ['xox'], boundary: true, read: after(['e.xoxp-', 'e-'], token(isSlackChar, 10, 255)) },
    { kind: 'slack_token', prefixes: ['xapp-'], boundary: true, read: token(isSlackChar, 20, 255) },
    { kind: 'slack_webhook', prefixes: ['hooks.slack.com/services/'], boundary: false, read: readWebhook },
    { kind: 'stripe_key', prefixes: ['sk_', 'rk_'], boundary: true, read: after(['live_', 'test_'], token(isAlnum, 24, 247)) },
    { kind: 'stripe_key', prefixes: ['whsec_'], boundary: true, read: token(isAlnum, 32, 64) },
    { kind: 'anthropic_key', prefixes: ['sk-ant-'], boundary: true, read: token(isB64Url, 32) },
    { kind: 'openai_key', prefixes: ['sk-'], boundary: true, read: openAiReader },
    { kind: 'google_api_key', prefixes: ['AIza'], boundary: true, read: exact(isB64Url, 35, isB64Url) },
    { kind: 'npm_token', prefixes: ['npm_'], boundary: true, read: exact(isAlnum, 36) },
    { kind: 'jwt', prefixes: ['eyJ', 'eyA', 'ew'], boundary: true, read: readJwtOrNot },
    { kind: 'private_key', prefixes: ['-----BEGIN '], boundary: false, read: readPem },
    ...PROVIDER_FORMATS,
    ...CONFIG_FORMATS,
]);

/** A GitLab token may be followed by a full stop that ends the sentence. */
function trimDots(read: Reader): Reader {
  return (text, at, after, scan) => {
    const r = read(text, at, after, scan);
    let end = r.end;
    while (end > after && text.charCodeAt(end - 1) === 46) end--;
    return { end: r.end < 0 || end - after < 20 ? -1 : end, next: r.next };
  };
}

/** The literals every secret of these kinds contains (the scan hint). */
export function prefixesOf(kinds: readonly SecretKind[]): string[] {
  return [...new Set(formatsFor(kinds).flatMap((f) => f.prefixes))];
}

/** The formats of `kinds`, in scan order: what a compiled check keeps. */
export function formatsFor(kinds: readonly SecretKind[]): readonly Format[] {
  return FORMATS.filter((f) => kinds.includes(f.kind));
}

/**
 * Reports every secret of `kinds` in `text`, each format's finds left to right. Returns
 * false when `report` asked to stop.
 */
export function scanSecrets(
  text: string,
  formats: readonly Format[],
  report: (kind: SecretKind, found: string) => boolean,
  holdsIgnorable = hasIgnorable(text),
): boolean {
  // Invisible characters inside a token do not hide it (ignorable.ts).
  const v = visibleOf(text, holdsIgnorable);
  if (v === null) return scanWritten(text, formats, report);
  return scanWritten(v.visible, formats, (kind, found) => report(kind, v.written(found)));
}

/**
 * Where the prefixes of a list of formats start, by their first two characters: one pass
 * over the text looks each pair up in a table, and only a pair that starts some prefix is
 * compared further. Built once per list (a compiled check keeps its list).
 */
interface PrefixIndex {
  /** (c0 << 7 | c1) for ASCII c0, c1 -> 1 + the bucket of the prefixes starting so; 0: none. */
  readonly pairs: Uint8Array;
  readonly buckets: ReadonlyArray<ReadonlyArray<{ prefix: string; format: number }>>;
}

const INDEXES = new WeakMap<readonly Format[], PrefixIndex>();

function indexOf(formats: readonly Format[]): PrefixIndex {
  let index = INDEXES.get(formats);
  if (index !== undefined) return index;
  const pairs = new Uint8Array(128 * 128);
  const buckets: Array<Array<{ prefix: string; format: number }>> = [];
  formats.forEach((format, f) => {
    for (const prefix of format.prefixes) {
      const key = (prefix.charCodeAt(0) << 7) | prefix.charCodeAt(1);
      if (pairs[key] === 0) {
        buckets.push([]);
        pairs[key] = buckets.length;
      }
      buckets[pairs[key]! - 1]!.push({ prefix, format: f });
    }
  });
  index = { pairs, buckets };
  INDEXES.set(formats, index);
  return index;
}

/**
 * One pass over the text: at each position whose two characters start a prefix, each
 * format with such a prefix reads its token unless an earlier token of that format covered
 * the position (per format, the scan resumes after what it read, so it stays linear).
 */
function scanWritten(text: string, formats: readonly Format[], report: (kind: SecretKind, found: string) => boolean): boolean {
  const scan: ScanState = { pemEndAt: -1 };
  const { pairs, buckets } = indexOf(formats);
  const resume = new Array<number>(formats.length).fill(0);
  const last = text.length - 1;
  // The pairs are read from the text's low bytes, a typed array, rather than with charCodeAt
  // (-14% CPU per 2 KB check on a flat string, -34% on a sliced one); a non-ASCII character
  // may then select a bucket, whose prefixes (ASCII) startsWith on the text rules out.
  const bytes = Buffer.from(text, 'latin1');
  let c1 = bytes[0]! & 127;
  for (let at = 0; at < last; at++) {
    const c0 = c1;
    c1 = bytes[at + 1]! & 127;
    const b = pairs[(c0 << 7) | c1]!;
    if (b === 0) continue;
    const bucket = buckets[b - 1]!;
    for (let k = 0; k < bucket.length; k++) {
      const { prefix, format: f } = bucket[k]!;
      if (at < resume[f]! || !text.startsWith(prefix, at)) continue;
      const format = formats[f]!;
      if (format.boundary && at > 0 && isAlnum(text.charCodeAt(at - 1))) continue;
      const r = format.read(text, at, at + prefix.length, scan);
      resume[f] = Math.max(r.next, at + prefix.length);
      if (r.end >= 0 && !report(format.kind, text.slice(r.start ?? at, r.end))) return false;
    }
  }
  return true;
}
