/**
 * The `pii` evaluator: personal data found in linear time and validated before it counts
 * (numbers.ts, network.ts, phone.ts). Its message and metadata give kinds and counts,
 * never the values; what it found goes in `found`, which the engine shows masked.
 */
import { z } from 'zod';
import type { CompiledCheck, EvaluatorDefinition, EvaluatorOutcome, Prefilter, ScanHint, ValueMemo } from '../types.js';
import { textOf } from '../text.js';
import { digitRunsOf, type DigitRuns } from './digit-runs.js';
import { scanEmails, scanIps } from './network.js';
import { scanCards, scanIbans, scanSsns, type Report } from './numbers.js';
import { isSupportedCountry, scanPhones, type CountryCode, type PhoneScan } from './phone.js';

export const PII_KINDS = ['email', 'phone', 'credit_card', 'iban', 'us_ssn', 'ip_address'] as const;
export type PiiKind = (typeof PII_KINDS)[number];

export const PiiConfigSchema = z.strictObject({
  kinds: z
    .array(z.enum(PII_KINDS))
    .min(1, 'kinds must hold at least one kind')
    .optional()
    .describe('What to look for (default: all): email, phone, credit_card, iban, us_ssn, ip_address'),
  min_count: z.number().int().min(1).default(1).describe('Findings (all kinds together) needed for a match'),
  phone_region: z
    .string()
    .refine(isSupportedCountry, { message: 'phone_region must be a region code such as "US" or "GB" (ISO 3166-1 alpha-2)' })
    .optional()
    .describe('Region whose national phone format counts too, for example US; without it only international numbers (+...) count'),
});
export type PiiConfig = z.infer<typeof PiiConfigSchema>;

/** Findings kept per value at most: the counts stop there (`100+`), and so does the scan. */
export const MAX_FINDINGS = 100;

const NO_MATCH: EvaluatorOutcome = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });

type Scanner = (text: string, runs: DigitRuns, report: Report, phones: PhoneScan) => boolean;

const NO_RUNS: DigitRuns = Object.freeze({ starts: [], ends: [] });

const DIGITS = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'];

export const piiEvaluator: EvaluatorDefinition = {
  name: 'pii',
  description:
    'Finds personal data (email, phone, credit_card, iban, us_ssn, ip_address) and validates each finding ' +
    '(Luhn, mod-97, SSA rules, phone number metadata); answers with kinds and counts, never the values.',
  configSchema: z.toJSONSchema(PiiConfigSchema, { io: 'input' }),
  zodSchema: PiiConfigSchema,
  compile(config) {
    const { kinds, min_count, phone_region } = PiiConfigSchema.parse(config);
    const chosen = PII_KINDS.filter((k) => kinds === undefined || kinds.includes(k));
    const region = phone_region;
    const scanners = chosen.map((kind): [PiiKind, Scanner] => [kind, scannerOf(kind, region)]);
    return Object.assign(checkOf(scanners, min_count), hintOf(chosen));
  },
};

function scannerOf(kind: PiiKind, region: CountryCode | undefined): Scanner {
  switch (kind) {
    case 'email':
      return (text, _runs, report) => scanEmails(text, report);
    case 'phone':
      return (text, runs, report, phones) => scanPhones(text, runs, region, report, phones);
    case 'credit_card':
      return scanCards;
    case 'iban':
      return scanIbans;
    case 'us_ssn':
      return scanSsns;
    case 'ip_address':
      return scanIps;
  }
}

/**
 * The scan hint (see ScanHint): an e-mail address holds '@', every other kind a digit, so a
 * text with neither cannot match.
 */
function hintOf(kinds: readonly PiiKind[]): ScanHint {
  const literals = kinds.some((k) => k !== 'email') ? [...DIGITS] : [];
  if (kinds.includes('email')) literals.push('@');
  // IPv6 addresses may be written without a digit (`fe::ab`): they hold ':' instead.
  if (kinds.includes('ip_address')) literals.push(':');
  const prefilter: Prefilter = Object.freeze({ literals, folded: false });
  return { scanPrefilter: prefilter };
}

function checkOf(scanners: ReadonlyArray<readonly [PiiKind, Scanner]>, minCount: number): CompiledCheck {
  const literals = hintOf(scanners.map(([k]) => k)).scanPrefilter!.literals;
  const numbers = scanners.some(([k]) => k !== 'email');
  return (value: unknown, memo?: ValueMemo) => {
    const text = memo ? memo.text(value) : textOf(value);
    if (text === undefined || !literals.some((l) => text.includes(l))) return NO_MATCH;
    const found: string[] = [];
    const counts: Partial<Record<PiiKind, number>> = {};
    const phones: PhoneScan = { unchecked: 0 };
    // The digit runs every number kind starts from, found in one pass for all of them.
    const runs = numbers ? digitRunsOf(text) : NO_RUNS;
    for (const [kind, scan] of scanners) {
      if (found.length >= MAX_FINDINGS) break;
      scan(
        text,
        runs,
        (f) => {
          found.push(f);
          counts[kind] = (counts[kind] ?? 0) + 1;
          return found.length < MAX_FINDINGS;
        },
        phones,
      );
    }
    if (found.length < minCount) return NO_MATCH;
    return outcomeOf(counts, found, phones);
  };
}

function outcomeOf(counts: Partial<Record<PiiKind, number>>, found: string[], phones: PhoneScan): EvaluatorOutcome {
  const capped = found.length >= MAX_FINDINGS;
  const listed = Object.entries(counts).map(([kind, count]) => `${kind} (${count}${capped ? '+' : ''})`);
  const metadata: Record<string, number | boolean | Record<string, number>> = { counts: counts, total: found.length };
  if (capped) metadata.truncated = true;
  if (phones.unchecked > 0) metadata.phone_unchecked = phones.unchecked;
  return { matched: true, confidence: 1, message: `found ${listed.join(', ')}`, metadata, found };
}
