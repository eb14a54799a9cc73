/**
 * Redaction of recorded steps (docs/testing.md, docs/security.md). A field is redacted when
 * its name says it holds a secret, whatever its spelling: the name is read as words, so
 * `db_password`, `aws_secret_access_key`, `x-api-key`, `secretKey`, `bearer_token` and
 * `Credentials` are all caught (case, `_`, `-`, `.` and camelCase do not matter). Configured
 * rules add a name (`ssn`: that key at any depth) or a dotted path from the step
 * (`input.card_number`: that one field), compared the same way. A `sensitiveValue` check,
 * when given, also redacts a string whose content looks like a secret, whatever its field,
 * a `maskValue` masks the secrets inside the strings that are kept and a `maskNumber` the
 * numbers that are secrets (value-masks.ts); object keys go through `maskValue` too.
 * Redacted values become "[REDACTED]". Pure; the input is never modified.
 */

export const REDACTED = '[REDACTED]';

/**
 * Words that mark a field as secret wherever they appear in its name: `db_password`,
 * `client_secret`, `bearer_token`, `basic_auth`, `credentials` (a whole object).
 */
export const SECRET_WORDS: readonly string[] = Object.freeze([
  'password',
  'passwd',
  'pwd',
  'pass',
  'passphrase',
  'secret',
  'secrets',
  'token',
  'auth',
  'authorization',
  'credential',
  'credentials',
  'cookie',
  'cookies',
  'bearer',
  'jwt',
  'apikey',
  'privatekey',
  'otp',
  'cvv',
  'cvc',
]);

/** Two words that mark a field as secret when they follow each other: `x-api-key`, `aws_access_key_id`. */
export const SECRET_WORD_PAIRS: readonly string[] = Object.freeze([
  'api key',
  'private key',
  'access key',
  'secret key',
  'signing key',
  'encryption key',
  'session id',
  'card number',
]);

/**
 * The words of a field name, lowercased: split at anything but letters and digits, at
 * lowercase-to-uppercase (`secretKey`), at the end of an acronym (`APIKey`) and between
 * letters and digits (`password2`).
 */
export function wordsOf(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .replace(/([A-Za-z])([0-9])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
}

const secretWords = new Set(SECRET_WORDS);
const secretPairs = new Set(SECRET_WORD_PAIRS);

/** Whether a field name says it holds a secret (SECRET_WORDS, SECRET_WORD_PAIRS). */
export function isSecretName(name: string): boolean {
  const words = wordsOf(name);
  for (let i = 0; i < words.length; i++) {
    if (secretWords.has(words[i]!)) return true;
    if (i > 0 && secretPairs.has(`${words[i - 1]} ${words[i]}`)) return true;
  }
  return false;
}

export interface Redactor {
  /** A redacted copy (shares nothing mutable with the input). */
  redact(value: unknown): unknown;
}

export interface RedactorOptions {
  /** Redact names that SECRET_WORDS and SECRET_WORD_PAIRS mark (default true). */
  secretNames?: boolean;
  /** Also redact any string this says holds a secret (for example a key format's detector). */
  sensitiveValue?: (value: string) => boolean;
  /**
   * Masks the secrets inside a string that is kept (value-masks.ts: credentials and card
   * numbers masked in place, whatever the field is called).
   */
  maskValue?: (value: string) => string;
  /** Masks a number that holds a secret (value-masks.ts: a card number sent as a JSON number). */
  maskNumber?: (value: number) => unknown;
}

/** A name or path written as words joined by `_`: how rules and field names are compared. */
const keyOf = (name: string) => wordsOf(name).join('_');

export function createRedactor(rules: readonly string[], options: RedactorOptions = {}): Redactor {
  const useSecretNames = options.secretNames ?? true;
  const sensitiveValue = options.sensitiveValue;
  const maskValue = options.maskValue ?? ((value: string) => value);
  const maskNumber = options.maskNumber ?? ((value: number) => value);
  const names = new Set<string>();
  const paths: string[][] = [];
  for (const rule of rules) {
    const parts = rule.split('.').map(keyOf).filter((p) => p !== '');
    if (parts.length === 1) names.add(parts[0]!);
    else if (parts.length > 1) paths.push(parts);
  }
  const redactsField = (name: string, key: string, here: readonly string[]) =>
    names.has(key) || (useSecretNames && isSecretName(name)) || paths.some((p) => sameList(p, here));
  // A key is data too (`{"4111111111111111": 1}`): masked as a kept string is; two keys
  // masked alike stay two keys (`4111…1111`, `4111…1111#2`).
  const keptName = (name: string, out: Record<string, unknown>): string => {
    const masked = maskValue(name);
    if (masked === name) return name;
    let unique = masked;
    for (let n = 2; Object.hasOwn(out, unique); n++) unique = `${masked}#${n}`;
    return unique;
  };
  const redactAt = (value: unknown, path: readonly string[]): unknown => {
    if (typeof value === 'string') return sensitiveValue?.(value) === true ? REDACTED : maskValue(value);
    if (typeof value === 'number') return maskNumber(value);
    if (Array.isArray(value)) return value.map((item) => redactAt(item, path));
    if (value === null || typeof value !== 'object') return value;
    // Null prototype: a key named __proto__ stays a key, instead of replacing the copy's prototype.
    const out = Object.create(null) as Record<string, unknown>;
    for (const [name, inner] of Object.entries(value as Record<string, unknown>)) {
      const key = keyOf(name);
      const here = [...path, key];
      out[keptName(name, out)] = redactsField(name, key, here) ? REDACTED : redactAt(inner, here);
    }
    return out;
  };
  return { redact: (value) => redactAt(value, []) };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
