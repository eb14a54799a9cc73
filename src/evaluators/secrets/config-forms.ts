/**
 * Credentials found by where they are written rather than by their own format: the
 * `_authToken` of an `.npmrc`, the password of a connection string, an `Authorization:
 * Bearer` header with a high-entropy value, an Azure storage `AccountKey`. PURE. Each reads
 * a bounded number of characters after its literal, so a scan stays linear.
 */
import { shannonEntropy } from './entropy.js';
import { isAlnum, isB64, runEnd, token, type FormatOf, type Reader } from './readers.js';

export const CONFIG_KINDS = ['npmrc_auth_token', 'connection_string_password', 'bearer_token', 'azure_storage_key'] as const;
export type ConfigKind = (typeof CONFIG_KINDS)[number];

/** A value ends at white space, a quote or what separates values in configs and URLs. */
const isValueChar = (c: number) => c > 32 && c !== 34 && c !== 39 && c !== 96 && c !== 44 && c !== 59 && c !== 92 && c < 127;
/** RFC 6750 b64token: letters, digits and `-._~+/`, then `=` padding. */
const isB64Token = (c: number) => isAlnum(c) || c === 45 || c === 46 || c === 95 || c === 126 || c === 43 || c === 47 || c === 61;
/** What a URL's user and password may hold before `@` (no `/`, `@`, space or quote). */
const isUserInfo = (c: number) => c > 32 && c !== 47 && c !== 64 && c !== 34 && c !== 39 && c !== 60 && c !== 62 && c < 127;
const isSchemeChar = (c: number) => isAlnum(c) || c === 43 || c === 45 || c === 46;

const VALUE_MAX = 256;
const SCHEME_MAX = 24;
/** Bits per character a Bearer value needs: a random token has more, a word or an id less. */
export const BEARER_MIN_ENTROPY = 3.5;

/** `_authToken=…` (npm's registry credential in .npmrc), up to the end of the value. */
const readNpmrc: Reader = (text, at, after) => {
  let i = after;
  while (text.charCodeAt(i) === 32) i++;
  if (text.charCodeAt(i) === 34 || text.charCodeAt(i) === 39) i++;
  const start = i;
  const end = Math.min(runEnd(text, start, isValueChar), start + VALUE_MAX);
  return end - start >= 8 ? { start, end, next: end } : { end: -1, next: Math.max(end, at + 1) };
};

/**
 * `scheme://user:password@host`: the password, when a scheme of letters stands right
 * before `://` (read back at most 24 characters) and `@` closes the user part.
 */
const readConnection: Reader = (text, at, after) => {
  let s = at;
  while (s > 0 && at - s < SCHEME_MAX && isSchemeChar(text.charCodeAt(s - 1))) s--;
  if (s === at) return { end: -1, next: after };
  const userEnd = Math.min(runEnd(text, after, (c) => isUserInfo(c) && c !== 58), after + VALUE_MAX);
  if (text.charCodeAt(userEnd) !== 58) return { end: -1, next: Math.max(userEnd, after) };
  const start = userEnd + 1;
  const end = Math.min(runEnd(text, start, isUserInfo), start + VALUE_MAX);
  if (text.charCodeAt(end) !== 64 || end === start) return { end: -1, next: Math.max(end, after) };
  return { start, end, next: end };
};

/** `Bearer <token>` whose token is 20+ characters of high entropy (not `Bearer undefined`). */
const readBearer: Reader = (text, at, after) => {
  let i = after;
  while (text.charCodeAt(i) === 32 && i - after < 8) i++;
  const start = i;
  const end = runEnd(text, start, isB64Token);
  const length = end - start;
  if (length < 20 || length > 4096) return { end: -1, next: Math.max(end, after) };
  // Entropy of the first 256 characters: a long token is measured on its start, in bounded time.
  const ok = shannonEntropy(text.slice(start, Math.min(end, start + VALUE_MAX))) >= BEARER_MIN_ENTROPY;
  return ok ? { start, end, next: end } : { end: -1, next: end };
};

/** Azure storage connection strings: `AccountKey=` then 86-88 base64 characters (64 bytes). */
const readAccountKey = token(isB64, 86, 88);

export const CONFIG_FORMATS: ReadonlyArray<FormatOf<ConfigKind>> = [
  { kind: 'npmrc_auth_token', prefixes: ['_authToken='], boundary: false, read: readNpmrc },
  { kind: 'connection_string_password', prefixes: ['://'], boundary: false, read: readConnection },
  { kind: 'bearer_token', prefixes: ['Bearer ', 'bearer ', 'BEARER '], boundary: true, read: readBearer },
  {
    kind: 'azure_storage_key',
    prefixes: ['AccountKey='],
    boundary: false,
    read: (text, at, after, scan) => {
      const r = readAccountKey(text, at, after, scan);
      return r.end < 0 ? r : { start: after, end: r.end, next: r.next };
    },
  },
];
