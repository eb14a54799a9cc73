import { IGNORABLE_LITERALS } from '../../src/evaluators/secrets/ignorable.js';
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry, secretsEvaluator, type EvaluatorOutcome } from '../../src/evaluators/index.js';
import { shannonEntropy } from '../../src/evaluators/secrets/entropy.js';
import { base62, crc32 } from '../../src/evaluators/secrets/checks.js';
import type { ScanHint } from '../../src/evaluators/types.js';

function run(config: object, value: unknown): EvaluatorOutcome {
  return secretsEvaluator.compile(config as never)(value) as EvaluatorOutcome;
}
const foundIn = (value: unknown, config: object = {}) => {
  const o = run(config, value);
  return o.matched ? [...(o.found ?? [])] : [];
};

// Made-up credentials in the documented formats (none of them is live).
const b62 = (n: number, seed = 'aB3xK9qZ') => seed.repeat(Math.ceil(n / seed.length)).slice(0, n);
const AWS = 'AKIAQWERTYUIOPASDF7Z';
// GitHub and npm tokens end with the CRC-32 of their 30 random characters (checks.ts).
const withCrc = (prefix: string, body = b62(30)) => `${prefix}${body}${base62(crc32(body), 6)}`;
const GHP = withCrc('ghp_');
const GH_PAT = `github_pat_11ABCDEFG0${b62(12)}_${b62(59)}`;
const GLPAT = `glpat-${b62(20)}`;
const SLACK = `xoxb-293847561029-3948571620394-${b62(24)}`;
const HOOK = `https://hooks.slack.com/services/T0A9B3C7D/B0E5F1G2H/${b62(24)}`;
const STRIPE = `sk_live_${b62(24)}`;
const STRIPE_TEST = `rk_test_${b62(30)}`;
const OPENAI = `sk-proj-${b62(48)}`;
const OPENAI_LEGACY = `sk-${b62(20)}T3BlbkFJ${b62(20)}`;
const ANTHROPIC = `sk-ant-api03-${b62(93)}AA`;
const GOOGLE = `AIza${b62(35)}`;
const NPM = withCrc('npm_');
const b64url = (s: string) => Buffer.from(s).toString('base64url');
const JWT = `${b64url('{"alg":"HS256","typ":"JWT"}')}.${b64url('{"sub":"1234567890","name":"x"}')}.${b62(43)}`;
const PEM_HEADER = '-----BEGIN RSA PRIVATE KEY-----';
const PEM = `${PEM_HEADER}\nMIIEowIBAAKCAQEA${b62(64)}\n-----END RSA PRIVATE KEY-----`;

type Case = [kind: string, text: string, found: string];
const truePositives: Case[] = [
  ['aws_access_key', `key ${AWS} here`, AWS],
  ['aws_access_key', 'temporary ASIAY34FZKBOKMUTVV7A.', 'ASIAY34FZKBOKMUTVV7A'],
  ['github_token', `token=${GHP}`, GHP],
  ['github_token', `"${GH_PAT}"`, GH_PAT],
  ['github_token', `${GHP.replace('ghp_', 'gho_')} `, GHP.replace('ghp_', 'gho_')],
  ['gitlab_token', `use ${GLPAT}.`, GLPAT],
  ['slack_token', SLACK, SLACK],
  ['slack_webhook', `post to ${HOOK} now`, HOOK.slice('https://'.length)],
  ['stripe_key', STRIPE, STRIPE],
  ['stripe_key', STRIPE_TEST, STRIPE_TEST],
  ['openai_key', OPENAI, OPENAI],
  ['openai_key', OPENAI_LEGACY, OPENAI_LEGACY],
  ['anthropic_key', ANTHROPIC, ANTHROPIC],
  ['google_api_key', `https://maps.example/api?key=${GOOGLE}&q=1`, GOOGLE],
  ['npm_token', `//registry.npmjs.org/:_authToken=${NPM}`, NPM],
  ['jwt', `Authorization: Bearer ${JWT}`, JWT],
  ['private_key', `here:\n${PEM}\nbye`, PEM],
  ['private_key', `{"key":"${PEM_HEADER}\\nMIIE..."}`, PEM_HEADER],
  ['private_key', '-----BEGIN OPENSSH PRIVATE KEY-----', '-----BEGIN OPENSSH PRIVATE KEY-----'],
  ['private_key', '-----BEGIN PGP PRIVATE KEY BLOCK-----', '-----BEGIN PGP PRIVATE KEY BLOCK-----'],
  // Bypass attempts: inside JSON strings, escaped JSON, URLs.
  ['aws_access_key', JSON.stringify({ note: `creds: ${AWS}` }), AWS],
  ['aws_access_key', JSON.stringify(JSON.stringify({ k: AWS })), AWS],
  ['github_token', `https://x-access-token:${GHP}@github.com/o/r.git`, GHP],
];

const nearMisses: Array<[name: string, text: string]> = [
  ['sk- followed by too few characters', 'sk-abc123'],
  ['sk- inside a word', `task-${b62(40)}`],
  ['an AWS key id one character short', 'AKIAIOSFODNN7EXAMPL'],
  ['an AWS key id one character long', 'AKIAIOSFODNN7EXAMPLEX'],
  ['an AWS key id in lower case', 'akiaiosfodnn7example'],
  ['a ghp_ token too short', `ghp_${b62(20)}`],
  ['a publishable Stripe key', `pk_live_${b62(24)}`],
  ['a Google key too short', `AIza${b62(20)}`],
  ['a JWT-looking string whose header has no alg', `${b64url('{"typ":"JWT"}')}.${b64url('{}')}.abc`],
  ['a JWT-looking string whose header is not JSON', `eyJub3QganNvbg.${b64url('{}')}.abc`],
  ['a public key', '-----BEGIN PUBLIC KEY-----'],
  ['a certificate', '-----BEGIN CERTIFICATE-----'],
  ['a low-entropy password', 'password=aaaaaaaa'],
  ['prose', 'the secret to a good key is a token of appreciation'],
];

describe('secrets: true positives', () => {
  it.each(truePositives)('%s in %j', (kind, text, found) => {
    const o = run({}, text);
    expect(o.found).toEqual([found]);
    expect(o.message).toBe(`found ${kind} (1)`);
  });
});

describe('secrets: near misses do not match', () => {
  it.each(nearMisses)('%s', (_name, text) => {
    expect(foundIn(text, { min_entropy: 3.5 })).toEqual([]);
  });
});

// The scan reads each character's low byte to find prefixes (formats.ts): a non-ASCII
// character whose low byte is a prefix's letter must not start or complete a token.
describe('secrets: non-ASCII characters whose low byte looks like a prefix', () => {
  // U+0141 (Ł) and U+0541 end in 0x41 ('A'); U+0167 (ŧ) ends in 0x67 ('g'); U+4B4B in 0x4B ('K').
  it.each([
    ['Ł for A', `\u0141${AWS.slice(1)}`],
    ['Armenian for A', `\u0541${AWS.slice(1)}`],
    ['ŧ for g', `\u0167${GHP.slice(1)}`],
    ['CJK for K', `A\u4B4B${AWS.slice(2)}`],
  ])('%s: no match', (_name, text) => {
    expect(foundIn(text, { allow_placeholders: false })).toEqual([]);
  });
  it.each([
    ['after Ł', `\u0141 ${AWS}`],
    ['between CJK text', `\u4B4B\u4B4B ${GHP} \u4B4B`],
    ['after an emoji', `🔑 ${AWS}`],
  ])('a real token %s is found', (_name, text) => {
    expect(foundIn(text).length).toBe(1);
  });
});

describe('secrets: min_entropy', () => {
  const random = 'Zx8#qL2!vR9@mK4$';
  it.each([
    ['password=', `password=${random}`],
    ['JSON', JSON.stringify({ db_password: random })],
    ['escaped JSON', JSON.stringify(JSON.stringify({ apiKey: random }))],
    ['YAML', `client_secret: ${random}\n`],
    ['URL', `https://x.example/?access_token=${random.replace(/[#!@$]/g, 'Q')}&x=1`],
    ['arrow', `'token' => '${random}'`],
  ])('finds a high-entropy value after a secret-sounding name (%s)', (_name, text) => {
    const o = run({ min_entropy: 3.5 }, text);
    expect(o.matched).toBe(true);
    expect(o.message).toBe('found high_entropy (1)');
  });

  it('is off without min_entropy, and its threshold is bits per character', () => {
    expect(run({}, `password=${random}`).matched).toBe(false);
    expect(shannonEntropy('aaaaaaaa')).toBe(0);
    expect(shannonEntropy('abcdefgh')).toBe(3);
    expect(run({ min_entropy: 3, allow_placeholders: false }, 'password=abcdefgh').matched).toBe(true);
    expect(run({ min_entropy: 3.1 }, 'password=abcdefgh').matched).toBe(false);
  });

  it('does not count a known-format secret twice', () => {
    const o = run({ min_entropy: 3 }, `aws_secret_key_id = ${AWS}`);
    expect(o.message).toBe('found aws_access_key (1)');
  });

  it('is not fooled by a character whose lowercase is longer', () => {
    expect(run({ min_entropy: 3.5 }, `İİİ password=${random}`).matched).toBe(true);
  });
});

describe('secrets: the outcome', () => {
  it('names kinds and counts, never a secret', () => {
    const o = run({}, `${AWS} ${GHP} ${NPM} ${b62(3)} ${GHP.replace('ghp_', 'ghs_')}`);
    expect(o.message).toBe('found aws_access_key (1), github_token (2), npm_token (1)');
    expect(o.metadata).toEqual({ counts: { aws_access_key: 1, github_token: 2, npm_token: 1 }, total: 4 });
    expect(JSON.stringify([o.message, o.metadata])).not.toMatch(/AKIAIOSF|aB3xK9qZ/);
  });

  it('kinds limit the formats', () => {
    expect(run({ kinds: ['jwt'] }, AWS).matched).toBe(false);
    expect(run({ kinds: ['aws_access_key'] }, AWS).matched).toBe(true);
  });

  it('declares the prefixes as its scan hint (lowercased with min_entropy)', () => {
    const aws = secretsEvaluator.compile({ kinds: ['aws_access_key'] }) as ScanHint;
    expect(aws.scanPrefilter).toEqual({ literals: ['AKIA', 'ASIA', 'ABIA', 'ACCA', ...IGNORABLE_LITERALS], folded: false });
    const loose = secretsEvaluator.compile({ kinds: ['aws_access_key'], min_entropy: 4 }) as ScanHint;
    expect(loose.scanPrefilter).toEqual({ literals: ['akia', 'asia', 'abia', 'acca', 'key', 'secret', 'token', 'passw', 'pwd', 'credential', ...IGNORABLE_LITERALS], folded: true });
    // The hint holds for every true positive: a text without the literals has no secret.
    const all = secretsEvaluator.compile({}) as ScanHint;
    for (const [, text] of truePositives) expect(all.scanPrefilter!.literals.some((l) => text.includes(l))).toBe(true);
  });
});

describe('secrets: config errors', () => {
  const registry = createDefaultRegistry();
  it('refuses an unknown kind with its field path', () => {
    const issues = registry.validateConfig('secrets', { kinds: ['aws_access_key', 'azure'] });
    expect(issues).toHaveLength(1);
    expect(issues[0]!.field).toBe('evaluator.config.kinds[1]');
  });
  it('refuses a min_entropy out of range', () => {
    expect(registry.validateConfig('secrets', { min_entropy: 0 })[0]!.field).toBe('evaluator.config.min_entropy');
    expect(registry.validateConfig('secrets', { min_entropy: 9 })[0]!.field).toBe('evaluator.config.min_entropy');
    expect(registry.validateConfig('secrets', { min_entropy: 3.5 })).toEqual([]);
  });
});

describe('secrets: hostile input stays linear and bounded', () => {
  const big = 100_000;
  const base64 = Buffer.from(Array.from({ length: 750_000 }, (_, i) => (i * 7919) % 256)).toString('base64');
  it.each([
    ['1 MB of base64', base64],
    ['1 MB of base64url', Buffer.from(base64, 'base64').toString('base64url')],
    ['prefixes without tokens', 'sk-ghp_AKIAeyJ'.repeat(big / 14)],
    ['JWT headers', 'eyJhbGciOiJIUzI1NiJ9.'.repeat(big / 21)],
    ['PEM headers without an end', `${PEM_HEADER}\n`.repeat(big / 32)],
    ['secret words', 'password=key:token='.repeat(big / 19)],
    ['a long token after a name', `password=${'x'.repeat(big)}`],
  ])('%s', (_name, text) => {
    const o = run({ min_entropy: 3.5 }, text);
    expect(typeof o.matched).toBe('boolean');
  });

  it('PEM headers without an end are each found, and the count stops at 100', () => {
    const o = run({}, `${PEM_HEADER}\n`.repeat(500));
    expect(o.found).toHaveLength(100);
    expect(o.message).toBe('found private_key (100+)');
  });
});
