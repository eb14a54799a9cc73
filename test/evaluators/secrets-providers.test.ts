// Every provider kind and config form of the secrets evaluator: a true example and a near
// miss each, placeholders (not matched by default, flagged with allow_placeholders: false)
// and the GitHub/npm checksum. All credentials here are random strings in the documented shapes.
import { describe, expect, it } from 'vitest';
import { secretsEvaluator, type EvaluatorOutcome } from '../../src/evaluators/index.js';
import { base62, crc32, isPlaceholder } from '../../src/evaluators/secrets/checks.js';
import { SECRET_KINDS } from '../../src/evaluators/secrets/formats.js';
import { PROVIDER_KINDS } from '../../src/evaluators/secrets/providers.js';

const run = (value: string, config: object = {}) => secretsEvaluator.compile(config as never)(value) as EvaluatorOutcome;

// A deterministic generator, so the examples are random-looking but stable.
let seed = 20261206;
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
function next(): number {
  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
function rnd(n: number, chars = ALNUM): string {
  let out = '';
  for (let i = 0; i < n; i++) out += chars[Math.floor(next() * chars.length)];
  return out;
}
const HEX = '0123456789abcdef';
const UP = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const B64URL = `${ALNUM}-_`;
const ALPHA = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
// A Discord bot token starts with the bot's id (decimal) in base64.
const DISCORD_ID = Buffer.from(`1${rnd(17, DIGITS)}`).toString('base64url');

/** kind, a token of that kind, a near miss (wrong length, wrong characters or not at a word start). */
const providers: Array<[kind: string, token: string, nearMiss: string]> = [
  ['huggingface_token', `hf_${rnd(34, ALPHA)}`, `hf_${rnd(33, ALPHA)}`],
  ['sendgrid_key', `SG.${rnd(22, B64URL)}.${rnd(43, B64URL)}`, `SG.${rnd(20, B64URL)}.${rnd(43, B64URL)}`],
  ['twilio_key', `SK${rnd(32, HEX)}`, `SK${rnd(32, HEX).toUpperCase()}`],
  ['mailgun_key', `key-${rnd(32, HEX)}`, `key-${rnd(31, HEX)}`],
  ['shopify_token', `shpat_${rnd(32, HEX)}`, `shpxx_${rnd(32, HEX)}`],
  ['digitalocean_token', `dop_v1_${rnd(64, HEX)}`, `dop_v2_${rnd(64, HEX)}`],
  ['pypi_token', `pypi-AgEIcHlwaS5vcmc${rnd(150, B64URL)}`, `pypi-AgEIcHlwaS5vcmc${rnd(68, B64URL)}`],
  ['databricks_token', `dapi${rnd(32, HEX)}`, `dapi${rnd(30, HEX)}`],
  ['doppler_token', `dp.pt.${rnd(43)}`, `dp.xx.${rnd(43)}`],
  ['linear_key', `lin_api_${rnd(40)}`, `lin_api_${rnd(39)}`],
  ['postman_key', `PMAK-${rnd(24, HEX)}-${rnd(34, HEX)}`, `PMAK-${rnd(24, HEX)}${rnd(34, HEX)}`],
  ['atlassian_token', `ATATT3${rnd(180, B64URL)}=${rnd(8, HEX)}`, `ATATT3${rnd(40, B64URL)}`],
  ['newrelic_key', `NRAK-${rnd(27, UP)}`, `NRAK-${rnd(10, UP)}`],
  ['grafana_token', `glsa_${rnd(32)}_${rnd(8, HEX)}`, `glsa_${rnd(20)}`],
  ['pulumi_token', `pul-${rnd(40, HEX)}`, `pul-${rnd(40, UP)}`],
  ['planetscale_token', `pscale_tkn_${rnd(43, B64URL)}`, `pscale_xyz_${rnd(43, B64URL)}`],
  ['vault_token', `hvs.${rnd(90, B64URL)}`, `hvs.${rnd(10, B64URL)}`],
  ['dynatrace_token', `dt0c01.${rnd(24, UP)}.${rnd(64, UP)}`, `dt0c01.${rnd(24, UP)}.${rnd(20, UP)}`],
  ['flyio_token', `fo1_${rnd(43, B64URL)}`, `fo1_${rnd(40, B64URL)}`],
  ['age_secret_key', `AGE-SECRET-KEY-1${rnd(58, UP)}`, `AGE-SECRET-KEY-1${rnd(50, UP)}`],
  ['square_token', `sq0atp-${rnd(22, B64URL)}`, `sq0xyz-${rnd(22, B64URL)}`],
  ['facebook_token', `EAACEdEose0cBA${rnd(100)}`, `EAACEdEose0cBA${rnd(10)}`],
  ['sentry_token', `sntryu_${rnd(64, HEX)}`, `sntryu_${rnd(60, HEX)}`],
  ['heroku_key', `HRKU-${rnd(60, B64URL)}`, `HRKU-${rnd(30, B64URL)}`],
  ['supabase_token', `sbp_${rnd(40, HEX)}`, `sbp_${rnd(39, HEX)}`],
  ['netlify_token', `nfp_${rnd(40)}`, `nfp_${rnd(20)}`],
  ['groq_key', `gsk_${rnd(52)}`, `gsk_${rnd(50)}`],
  ['xai_key', `xai-${rnd(80)}`, `xai-${rnd(70)}`],
  ['perplexity_key', `pplx-${rnd(48)}`, `pplx-${rnd(20)}`],
  ['replicate_token', `r8_${rnd(37)}`, `r8_${rnd(30)}`],
  ['langsmith_key', `lsv2_pt_${rnd(32, HEX)}_${rnd(10, HEX)}`, `lsv2_pt_${rnd(32, HEX)}`],
  ['notion_token', `ntn_${rnd(46)}`, `ntn_${rnd(45)}`],
  ['airtable_token', `pat${rnd(14)}.${rnd(64, HEX)}`, `pat${rnd(14)}.${rnd(20, HEX)}`],
  ['figma_token', `figd_${rnd(43, B64URL)}`, `figd_${rnd(20, B64URL)}`],
  ['contentful_token', `CFPAT-${rnd(43, B64URL)}`, `CFPAT-${rnd(42, B64URL)}`],
  ['rubygems_key', `rubygems_${rnd(48, HEX)}`, `rubygems_${rnd(47, HEX)}`],
  ['dockerhub_token', `dckr_pat_${rnd(27, B64URL)}`, `dckr_pat_${rnd(20, B64URL)}`],
  ['clojars_token', `CLOJARS_${rnd(60)}`, `CLOJARS_${rnd(59)}`],
  ['bitbucket_token', `ATBB${rnd(32)}`, `ATBB${rnd(10)}`],
  ['mapbox_token', `sk.eyJ1Ijoi${rnd(20)}.${rnd(22, B64URL)}`, `sk.eyJ${rnd(10)}`],
  ['shippo_key', `shippo_live_${rnd(40, HEX)}`, `shippo_live_${rnd(39, HEX)}`],
  ['easypost_key', `EZAK${rnd(54)}`, `EZAK${rnd(50)}`],
  ['prefect_key', `pnu_${rnd(36)}`, `pnu_${rnd(35)}`],
  ['readme_key', `rdme_${rnd(70)}`, `rdme_${rnd(60)}`],
  ['tailscale_key', `tskey-auth-${rnd(12)}-${rnd(30)}`, `tskey-${rnd(8)}`],
  ['onepassword_token', `ops_eyJ${rnd(200, B64URL)}`, `ops_eyJ${rnd(20, B64URL)}`],
  ['jfrog_key', `AKCp${rnd(69)}`, `AKCp${rnd(40)}`],
  ['discord_token', `${DISCORD_ID}.${rnd(6, B64URL)}.${rnd(27, B64URL)}`, `${DISCORD_ID}.${rnd(5, B64URL)}.${rnd(27, B64URL)}`],
  ['telegram_bot_token', `${rnd(10, DIGITS)}:A${rnd(34, B64URL)}`, `${rnd(5, DIGITS)}:A${rnd(34, B64URL)}`],
  ['mailchimp_key', `${rnd(32, HEX)}-us${rnd(2, DIGITS)}`, `${rnd(31, HEX)}-us${rnd(2, DIGITS)}`],
];

describe('secrets: provider formats', () => {
  it('covers every provider kind with a case here', () => {
    expect(new Set(providers.map(([k]) => k))).toEqual(new Set(PROVIDER_KINDS));
    expect(SECRET_KINDS.length - 4 - 2).toBeGreaterThanOrEqual(40 + 9);
  });

  it.each(providers)('%s: found in a sentence, in JSON and in an env line', (kind, token) => {
    for (const text of [`here is ${token} ok`, JSON.stringify({ note: token }), `export X="${token}"`]) {
      const o = run(text);
      expect(o.found, text).toEqual([token]);
      expect(o.message).toBe(`found ${kind} (1)`);
      expect(o.message).not.toContain(token);
    }
  });

  it.each(providers)('%s: a near miss is not found', (_kind, _token, miss) => {
    expect(run(`value ${miss} end`).matched).toBe(false);
  });

  it.each(providers)('%s: not found inside a longer word', (_kind, token) => {
    expect(run(`x${token}`).found ?? []).not.toContain(`x${token}`);
    expect(run(`Q${token}`).found ?? []).not.toContain(token);
  });
});

describe('secrets: config forms', () => {
  const npm = `npm_${rnd(36)}`;
  it('.npmrc _authToken, whatever the token', () => {
    const token = rnd(40, B64URL);
    expect(run(`//registry.example.org/:_authToken=${token}\n`).found).toEqual([token]);
    expect(run(`//npm.pkg.github.com/:_authToken="${token}"`).message).toBe('found npmrc_auth_token (1)');
    expect(run('//registry.npmjs.org/:_authToken=${NPM_TOKEN}').matched).toBe(false);
    expect(run('//registry.npmjs.org/:_authToken=').matched).toBe(false);
    void npm;
  });

  it('connection strings: the password, any scheme', () => {
    const pw = rnd(16);
    for (const url of [`postgres://app:${pw}@db.internal:5432/prod`, `mongodb+srv://admin:${pw}@cluster0.mongodb.net/x`, `redis://:${pw}@cache:6379`, `amqps://u:${pw}@mq`]) {
      const o = run(`DATABASE_URL=${url}`);
      expect(o.found, url).toEqual([pw]);
      expect(o.message).toBe('found connection_string_password (1)');
    }
    expect(run('https://example.org:8443/path?a=b').matched).toBe(false);
    expect(run('postgres://app@db/prod').matched).toBe(false);
    expect(run('postgres://user:password@localhost/db').matched).toBe(false);
    expect(run('postgres://user:${DB_PASSWORD}@localhost/db').matched).toBe(false);
    expect(run('postgres://user:<password>@localhost/db').matched).toBe(false);
  });

  it('Authorization: Bearer with a high-entropy value; not words or ids', () => {
    const t = rnd(40, B64URL);
    expect(run(`Authorization: Bearer ${t}`).found).toEqual([t]);
    expect(run(`authorization: bearer ${t}`).found).toEqual([t]);
    expect(run('Authorization: Bearer undefined').matched).toBe(false);
    expect(run('Authorization: Bearer aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa').matched).toBe(false);
    expect(run('Authorization: Bearer 11111111112222222222').matched).toBe(false);
    expect(run('the bearer bonds of 1923 were sold').matched).toBe(false);
  });

  it('Azure storage AccountKey', () => {
    const key = `${rnd(86, `${ALNUM}+/`)}==`;
    expect(run(`DefaultEndpointsProtocol=https;AccountName=x;AccountKey=${key};EndpointSuffix=core.windows.net`).found).toEqual([key]);
    expect(run('AccountKey=short==').matched).toBe(false);
  });
});

describe('secrets: placeholders', () => {
  const examples = [
    'AKIAIOSFODNN7EXAMPLE',
    'aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    `ghp_${'x'.repeat(36)}`,
    `sk_live_${'0'.repeat(24)}`,
    `glpat-${'X'.repeat(20)}`,
    'sk-proj-your_openai_api_key_goes_here_1234567',
    `xoxb-${'1'.repeat(12)}-abcdefghijklmnop`,
    `hf_${'abcdefghijklmnopqrstuvwxyzABCDEFGH'}`,
    'postgres://user:changeme@db/app',
    `SG.${'x'.repeat(22)}.${'x'.repeat(43)}`,
  ];
  it.each(examples)('%s is not matched by default, and flagged with allow_placeholders: false', (text) => {
    expect(run(text, { min_entropy: 3 }).matched).toBe(false);
    expect(run(text, { allow_placeholders: false, min_entropy: 3 }).matched).toBe(true);
  });

  it('random tokens are not placeholders', () => {
    for (let i = 0; i < 2000; i++) expect(isPlaceholder(`ghp_${rnd(36)}`)).toBe(false);
  });

  it('placeholder words in other case and spelling are placeholders', () => {
    for (const t of ['sk_live_EXAMPLEKEY0000abcXYZ12', 'sk_live_YourKeyHereYourKey1234', 'sk_live_Dummy9f8e7d6c5b4a3f2e1d', 'sk_live_REDACTEDredactedREDACT']) {
      expect(run(t).matched, t).toBe(false);
    }
  });
});

describe('secrets: GitHub and npm checksums', () => {
  const body = rnd(30);
  const good = `ghp_${body}${base62(crc32(body), 6)}`;
  it('a token whose last 6 characters are the CRC-32 of the 30 before is found', () => {
    expect(run(good).found).toEqual([good]);
    expect(run(good.replace('ghp_', 'npm_')).message).toBe('found npm_token (1)');
  });
  it('one character changed breaks the checksum: not a token GitHub issued', () => {
    const bad = `ghp_${body.slice(0, 10)}${body[10] === 'a' ? 'b' : 'a'}${body.slice(11)}${base62(crc32(body), 6)}`;
    expect(run(bad).matched).toBe(false);
    expect(run(bad, { allow_placeholders: false }).matched).toBe(true);
  });
  it('crc32 is the IEEE CRC-32', () => {
    expect(crc32('123456789')).toBe(0xcbf43926);
    expect(base62(61, 2)).toBe('0z');
  });
});

describe('secrets: hostile input for the new forms stays linear and bounded', () => {
  const big = 200_000;
  const allPrefixes = providers.map(([, t]) => t.slice(0, 6)).join(' ');
  it.each([
    ['scheme separators', '://'.repeat(big / 3)],
    ['a user part that never closes', `postgres://${'a'.repeat(big)}`],
    ['a password that never closes', `postgres://a:${'b'.repeat(big)}`],
    ['users and colons', 'x://a:b:c:d'.repeat(big / 11)],
    ['Bearer words', 'Bearer '.repeat(big / 7)],
    ['one very long Bearer value', `Bearer ${rnd(big, B64URL)}`],
    ['npmrc keys', '_authToken='.repeat(big / 11)],
    ['every provider prefix, again and again', allPrefixes.repeat(big / allPrefixes.length)],
    ['runs of hex after hex prefixes', `dapi${'a'.repeat(big)}`],
    ['Telegram separators after ids', '12345678:A'.repeat(big / 10)],
    ['one Telegram body that never ends', `12345678:A${'b'.repeat(big)}`],
    ['Mailchimp datacenters after hex', `${'a'.repeat(32)}-us1`.repeat(big / 36)],
    ['Discord id starts and dots', 'MTk4NjIy.'.repeat(big / 9)],
    ['unsigned JWT headers and long payloads', `${Buffer.from('{"alg":"none"}').toString('base64url')}.${'e'.repeat(big)}`],
  ])('%s', (_name, text) => {
    const o = run(text, { min_entropy: 3.5, allow_placeholders: false });
    expect(typeof o.matched).toBe('boolean');
    expect((o.found ?? []).length).toBeLessThanOrEqual(100);
  });
});
