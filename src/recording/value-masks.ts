/**
 * Redaction by value for recorded steps and shadow examples (docs/security.md): whatever a
 * field is called, a string that holds a credential in one of the `secrets` evaluator's
 * formats, or a number of 13-19 digits that passes the Luhn check (a card number), keeps its
 * text with that part masked as matches are masked everywhere (evaluators/mask.ts:
 * `AKIA…MPLE`, `4111…1111`); a JSON number that is such a card number becomes its masked
 * text. Pure.
 */
import { maskFoundIn, maskMatch } from '../evaluators/mask.js';
import { digitRunsOf } from '../evaluators/pii/digit-runs.js';
import { luhnValid, scanLuhnNumbers } from '../evaluators/pii/numbers.js';
import { formatsFor, scanSecrets, SECRET_KINDS } from '../evaluators/secrets/formats.js';
import { createRedactor, REDACTED, type Redactor } from './redact.js';

/**
 * The redaction of every step kept for later (recordings, shadow examples, replay
 * examples): by name (the secret-sounding names and `rules`) and by value.
 */
export function stepRedactor(rules: readonly string[]): Redactor {
  return createRedactor(rules, { maskValue: maskSecretsIn, maskNumber: maskNumberIn });
}

/**
 * A JSON number kept as it is, unless it is an integer of 13-19 digits that passes Luhn (a
 * card number), or one so large that JSON parsing already rounded it (16-19 digits beyond
 * 2^53: whether the number sent passed Luhn can no longer be told): then its masked text,
 * `4111…1111` (`-4111…1111` below zero).
 */
export function maskNumberIn(value: number): unknown {
  if (!Number.isInteger(value)) return value;
  const digits = Math.abs(value).toString();
  if (digits.length < 13 || digits.length > 19 || !/^\d+$/.test(digits)) return value;
  if (!luhnValid(digits) && Number.isSafeInteger(value)) return value;
  return `${value < 0 ? '-' : ''}${maskMatch(digits)}`;
}

const ALL_FORMATS = formatsFor(SECRET_KINDS);

/** Masked parts per string at most; a string holding more is replaced whole. */
export const MAX_MASKED = 1000;

/** `value` with every credential and Luhn-valid card number in it masked; `value` itself when it holds none. */
export function maskSecretsIn(value: string): string {
  const found: string[] = [];
  const keep = (f: string) => {
    found.push(f);
    return found.length < MAX_MASKED;
  };
  const complete = scanSecrets(value, ALL_FORMATS, (_kind, f) => keep(f)) && scanLuhnNumbers(value, digitRunsOf(value), keep);
  if (found.length === 0) return value;
  return complete ? maskFoundIn(value, found) : REDACTED;
}
