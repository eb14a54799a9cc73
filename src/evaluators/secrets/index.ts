/**
 * The `secrets` evaluator: credentials found by their documented formats (formats.ts) and,
 * with `min_entropy`, high-entropy values assigned to secret-sounding names (entropy.ts),
 * in the text read without default-ignorable code points (ignorable.ts).
 * Its message and metadata name kinds and counts, never a secret; what it found goes in
 * `found`, which the engine shows masked (`AKIA…MPLE`).
 */
import { z } from 'zod';
import type { CompiledCheck, EvaluatorDefinition, EvaluatorOutcome, Prefilter, ScanHint, ValueMemo } from '../types.js';
import { textOf } from '../text.js';
import { asciiLower, scanHighEntropy, SECRET_NAME_WORDS } from './entropy.js';
import { formatsFor, prefixesOf, scanSecrets, SECRET_KINDS, type SecretKind } from './formats.js';
import { hasIgnorable, IGNORABLE_LITERALS, scanVisible } from './ignorable.js';
import { checksumHolds, isPlaceholder, pemWithoutKey } from './checks.js';
import { CONFIG_KINDS } from './config-forms.js';

export const SecretsConfigSchema = z.strictObject({
  kinds: z
    .array(z.enum(SECRET_KINDS))
    .min(1, 'kinds must hold at least one kind')
    .optional()
    .describe(`Credential formats to look for (default: all): ${SECRET_KINDS.join(', ')}`),
  min_entropy: z
    .number()
    .positive()
    .max(8)
    .optional()
    .describe(
      'Also report values of 8+ characters assigned to names with key, secret, token, passw, pwd or credential ' +
        'whose Shannon entropy is at least this many bits per character (3.5 is a good start); off when absent',
    ),
  allow_placeholders: z
    .boolean()
    .optional()
    .describe(
      'true (default): placeholders and documented example keys (AKIAIOSFODNN7EXAMPLE, ghp_xxxx…, ${NPM_TOKEN}) and tokens ' +
        'failing their provider\'s checksum do not match; false: flag anything shaped like a credential',
    ),
});
export type SecretsConfig = z.infer<typeof SecretsConfigSchema>;

/** The kind a `min_entropy` finding is reported as. */
export const HIGH_ENTROPY = 'high_entropy';
/** Findings kept per value at most: the counts stop there (`100+`), and so does the scan. */
export const MAX_FINDINGS = 100;

const NO_MATCH: EvaluatorOutcome = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });

export const secretsEvaluator: EvaluatorDefinition = {
  name: 'secrets',
  description:
    'Finds credentials by their documented formats (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, Anthropic, Google, npm and ' +
    '50 more providers, JWTs, PEM private keys), in config forms (.npmrc _authToken, connection-string passwords, ' +
    'Authorization: Bearer) and, with min_entropy, high-entropy values named like secrets; skips placeholders; never echoes them.',
  configSchema: z.toJSONSchema(SecretsConfigSchema, { io: 'input' }),
  zodSchema: SecretsConfigSchema,
  compile(config) {
    const { kinds, min_entropy, allow_placeholders } = SecretsConfigSchema.parse(config);
    const chosen = SECRET_KINDS.filter((k) => kinds === undefined || kinds.includes(k));
    return Object.assign(checkOf(chosen, min_entropy, allow_placeholders !== false), hintOf(chosen, min_entropy));
  },
};

/**
 * The scan hint (see ScanHint): every secret of a format holds its prefix. With min_entropy
 * a finding may hold only a secret-sounding name in any case instead, so the literals are
 * compared lowercased (a prefix found as written is also found lowercased). A text with an
 * invisible character always passes, since one may split a prefix (ignorable.ts).
 */
function hintOf(kinds: readonly SecretKind[], minEntropy: number | undefined): ScanHint {
  const prefixes = prefixesOf(kinds);
  const prefilter: Prefilter =
    minEntropy === undefined
      ? Object.freeze({ literals: [...prefixes, ...IGNORABLE_LITERALS], folded: false })
      : Object.freeze({ literals: [...new Set([...prefixes.map((p) => p.toLowerCase()), ...SECRET_NAME_WORDS, ...IGNORABLE_LITERALS])], folded: true });
  return { scanPrefilter: prefilter };
}

const CONFIG_KIND_SET: ReadonlySet<string> = new Set(CONFIG_KINDS);

/**
 * Whether a find is a real credential rather than a placeholder or a token that was never
 * issued (checks.ts). A JWT's and a key's text is encoded, where placeholder words cannot
 * show; a PEM block is a placeholder when it holds no key material.
 */
function real(kind: string, found: string): boolean {
  if (!checksumHolds(kind, found)) return false;
  if (kind === 'private_key') return !pemWithoutKey(found);
  return kind === 'jwt' || !isPlaceholder(found);
}

function checkOf(kinds: readonly SecretKind[], minEntropy: number | undefined, skipPlaceholders: boolean): CompiledCheck {
  const formats = formatsFor(kinds);
  return (value: unknown, memo?: ValueMemo) => {
    const text = memo ? memo.text(value) : textOf(value);
    if (text === undefined) return NO_MATCH;
    const found: string[] = [];
    const counts: Record<string, number> = {};
    const add = (kind: string, f: string) => {
      found.push(f);
      counts[kind] = (counts[kind] ?? 0) + 1;
      return found.length < MAX_FINDINGS;
    };
    // Config forms are added after the scan: one (a Bearer header holding a JWT, an
    // _authToken holding an npm token) that repeats what a format found is counted once, as that format.
    const configFinds: Array<[string, string]> = [];
    const collect = (kind: string, f: string) => {
      if (skipPlaceholders && !real(kind, f)) return true;
      if (!CONFIG_KIND_SET.has(kind)) return add(kind, f);
      configFinds.push([kind, f]);
      return found.length + configFinds.length < MAX_FINDINGS;
    };
    // Tested once for both scans: -4% CPU per check on a 2 KB answer with min_entropy.
    const holdsIgnorable = minEntropy === undefined ? undefined : hasIgnorable(text);
    let going = scanSecrets(text, formats, collect, holdsIgnorable);
    for (const [kind, f] of configFinds) {
      if (found.length >= MAX_FINDINGS) break;
      if (!found.includes(f)) going = add(kind, f) && going;
    }
    if (going && minEntropy !== undefined) {
      // A value a format already reported is not counted again.
      const report = (f: string) =>
        found.some((known) => known.includes(f) || f.includes(known)) || (skipPlaceholders && isPlaceholder(f)) ? true : add(HIGH_ENTROPY, f);
      const scan = (visible: string, r: (found: string) => boolean) =>
        scanHighEntropy(visible, asciiLower(visible, visible === text ? memo?.lower(text) : undefined), minEntropy, r);
      scanVisible(text, scan, report, holdsIgnorable);
    }
    if (found.length === 0) return NO_MATCH;
    const capped = found.length >= MAX_FINDINGS;
    const listed = Object.entries(counts).map(([kind, count]) => `${kind} (${count}${capped ? '+' : ''})`);
    const metadata = capped ? { counts, total: found.length, truncated: true } : { counts, total: found.length };
    return { matched: true, confidence: 1, message: `found ${listed.join(', ')}`, metadata, found };
  };
}
