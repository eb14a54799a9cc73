/**
 * Redaction by value for recorded steps (docs/security.md): whatever a field is called, a
 * string that holds a credential in one of the `secrets` evaluator's formats, or a number
 * of 13-19 digits that passes the Luhn check (a card number), keeps its text with that part
 * masked as matches are masked everywhere (evaluators/mask.ts: `AKIA…MPLE`, `4111…1111`).
 * Pure.
 */
import { maskFoundIn } from '../evaluators/mask.js';
import { digitRunsOf } from '../evaluators/pii/digit-runs.js';
import { scanLuhnNumbers } from '../evaluators/pii/numbers.js';
import { formatsFor, scanSecrets, SECRET_KINDS } from '../evaluators/secrets/formats.js';
import { REDACTED } from './redact.js';

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
