/**
 * Token formats of SaaS and cloud providers beyond the core ones (formats.ts): each as the
 * provider documents it, a literal prefix then a body of known characters and length.
 * PURE. Placeholders and checksums are checked by the evaluator (checks.ts).
 */
import { after, exact, isAlnum, isAlpha, isB64, isB64Url, isDigit, isHex, isHexLower, isUpperNum, isWord, parts, runEnd, token, type FormatOf, type Reader } from './readers.js';

export const PROVIDER_KINDS = [
  'huggingface_token',
  'sendgrid_key',
  'twilio_key',
  'mailgun_key',
  'shopify_token',
  'digitalocean_token',
  'pypi_token',
  'databricks_token',
  'doppler_token',
  'linear_key',
  'postman_key',
  'atlassian_token',
  'newrelic_key',
  'grafana_token',
  'pulumi_token',
  'planetscale_token',
  'vault_token',
  'dynatrace_token',
  'flyio_token',
  'age_secret_key',
  'square_token',
  'facebook_token',
  'sentry_token',
  'heroku_key',
  'supabase_token',
  'netlify_token',
  'groq_key',
  'xai_key',
  'perplexity_key',
  'replicate_token',
  'langsmith_key',
  'notion_token',
  'airtable_token',
  'figma_token',
  'contentful_token',
  'rubygems_key',
  'dockerhub_token',
  'clojars_token',
  'bitbucket_token',
  'mapbox_token',
  'shippo_key',
  'easypost_key',
  'prefect_key',
  'readme_key',
  'tailscale_key',
  'onepassword_token',
  'jfrog_key',
  'discord_token',
  'telegram_bot_token',
  'mailchimp_key',
] as const;
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

const isDashWord = (c: number) => isB64Url(c) || c === 46;
const isB64Word = (c: number) => isB64(c) || c === 95 || c === 45;

type F = FormatOf<ProviderKind>;

/**
 * Discord bot tokens: the bot's id (a decimal number) in base64, a dot, 6 characters, a dot,
 * 27-38 characters. The id's first digit (1-9) makes the first two characters one of these;
 * the first part's other 22-24 are read after them.
 */
const DISCORD_ID_STARTS = ['MT', 'Mj', 'Mz', 'ND', 'NT', 'Nj', 'Nz', 'OD', 'OT'];
const readDiscord = parts(isB64Url, 46, [[22, 24], 6, [27, 38]]);

/** The `start` of a run of `length` (min..max) `chars` ending right before `at`, not continuing a word; -1 if none. */
function runBefore(text: string, at: number, chars: (c: number) => boolean, min: number, max: number): number {
  let s = at;
  while (s > 0 && at - s <= max && chars(text.charCodeAt(s - 1))) s--;
  const length = at - s;
  return length < min || length > max || (s > 0 && isAlnum(text.charCodeAt(s - 1))) ? -1 : s;
}

/** Telegram bot tokens: the bot's id (6-12 digits), `:A`, 34 base64url characters. */
const readTelegram: Reader = (text, at, afterPrefix, scan) => {
  const start = runBefore(text, at, isDigit, 6, 12);
  const r = exact(isB64Url, 34)(text, at, afterPrefix, scan);
  return start < 0 || r.end < 0 ? { end: -1, next: r.next } : { start, end: r.end, next: r.next };
};

/** Mailchimp API keys: 32 lower-case hex characters, `-us` and the datacenter's number. */
const readMailchimp: Reader = (text, at, afterPrefix) => {
  const start = runBefore(text, at, isHexLower, 32, 32);
  const end = runEnd(text, afterPrefix, isDigit);
  const ok = start >= 0 && end - afterPrefix >= 1 && end - afterPrefix <= 2 && !isWord(text.charCodeAt(end));
  return ok ? { start, end, next: end } : { end: -1, next: Math.max(end, afterPrefix) };
};

const f = (kind: ProviderKind, prefixes: string[], read: F['read']): F => ({ kind, prefixes, boundary: true, read });

export const PROVIDER_FORMATS: readonly F[] = [
  f('huggingface_token', ['hf_', 'api_org_'], exact(isAlpha, 34)),
  f('sendgrid_key', ['SG.'], parts(isB64Url, 46, [22, 43])),
  f('twilio_key', ['SK'], exact(isHexLower, 32)),
  f('mailgun_key', ['key-'], exact(isHexLower, 32)),
  f('shopify_token', ['shp'], after(['at_', 'ca_', 'pa_', 'ss_'], exact(isHex, 32))),
  f('digitalocean_token', ['do'], after(['p_v1_', 'o_v1_', 'r_v1_'], exact(isHexLower, 64))),
  // pypi.org and test.pypi.org: a macaroon, far longer than 70 characters past its prefix.
  f('pypi_token', ['pypi-AgEIcHlwaS5vcmc', 'pypi-AgENdGVzdC5weXBpLm9yZw'], token(isB64Url, 70, 1024)),
  f('databricks_token', ['dapi'], exact(isHexLower, 32)),
  f('doppler_token', ['dp.'], after(['pt.', 'st.', 'ct.', 'sa.', 'scim.', 'audit.'], token(isAlnum, 40, 44))),
  f('linear_key', ['lin_api_'], exact(isAlnum, 40)),
  f('postman_key', ['PMAK-'], parts(isHexLower, 45, [24, 34])),
  f('atlassian_token', ['ATATT3'], token((c) => isB64Url(c) || c === 61, 100, 300)),
  f('newrelic_key', ['NR'], after(['AK-', 'JS-', 'II-'], token(isUpperNum, 19, 40))),
  f('grafana_token', ['glsa_'], token(isWord, 40, 50)),
  f('grafana_token', ['glc_eyJ'], token(isB64, 32, 1024)),
  f('pulumi_token', ['pul-'], exact(isHexLower, 40)),
  f('planetscale_token', ['pscale_'], after(['tkn_', 'pw_', 'oauth_'], token(isDashWord, 32, 64))),
  f('vault_token', ['hvs.', 'hvb.'], token(isB64Url, 24, 512)),
  f('dynatrace_token', ['dt0c01.'], parts(isUpperNum, 46, [24, 64])),
  f('flyio_token', ['fo1_'], exact(isB64Url, 43)),
  f('flyio_token', ['fm2_'], token(isB64Word, 40, 2048)),
  f('age_secret_key', ['AGE-SECRET-KEY-1'], exact(isUpperNum, 58)),
  f('square_token', ['sq0'], after(['atp-', 'csp-'], token(isB64Url, 22, 60))),
  f('square_token', ['EAAA'], exact(isB64Url, 60)),
  f('facebook_token', ['EAACEdEose0cBA'], token(isAlnum, 20, 300)),
  f('sentry_token', ['sntrys_eyJ'], token(isB64Word, 50, 1024)),
  f('sentry_token', ['sntryu_'], exact(isHexLower, 64)),
  f('heroku_key', ['HRKU-'], token(isB64Url, 60, 80)),
  f('supabase_token', ['sbp_'], exact(isHexLower, 40)),
  f('supabase_token', ['sb_secret_'], token(isB64Url, 20, 64)),
  f('netlify_token', ['nfp_'], token(isAlnum, 36, 48)),
  f('groq_key', ['gsk_'], exact(isAlnum, 52)),
  f('xai_key', ['xai-'], exact(isAlnum, 80)),
  f('perplexity_key', ['pplx-'], token(isAlnum, 40, 56)),
  f('replicate_token', ['r8_'], exact(isAlnum, 37)),
  f('langsmith_key', ['lsv2_'], after(['pt_', 'sk_'], parts(isHexLower, 95, [32, 10]))),
  f('notion_token', ['ntn_'], exact(isAlnum, 46)),
  f('notion_token', ['secret_'], exact(isAlnum, 43)),
  f('airtable_token', ['pat'], parts(isAlnum, 46, [14, 64])),
  f('figma_token', ['figd_'], token(isB64Url, 40, 64)),
  f('contentful_token', ['CFPAT-'], exact(isB64Url, 43)),
  f('rubygems_key', ['rubygems_'], exact(isHexLower, 48)),
  f('dockerhub_token', ['dckr_pat_'], token(isB64Url, 27, 40)),
  f('clojars_token', ['CLOJARS_'], exact(isAlnum, 60)),
  f('bitbucket_token', ['ATBB'], token(isAlnum, 28, 40)),
  f('mapbox_token', ['sk.eyJ'], token(isDashWord, 40, 1024)),
  f('shippo_key', ['shippo_'], after(['live_', 'test_'], exact(isHexLower, 40))),
  f('easypost_key', ['EZ'], after(['AK', 'TK'], exact(isAlnum, 54))),
  f('prefect_key', ['pnu_'], exact(isAlnum, 36)),
  f('readme_key', ['rdme_'], exact(isAlnum, 70)),
  f('tailscale_key', ['tskey-'], token(isB64Url, 20, 128)),
  f('onepassword_token', ['ops_eyJ'], token(isB64Word, 50, 4096)),
  f('jfrog_key', ['AKCp'], token(isAlnum, 60, 80)),
  f('discord_token', DISCORD_ID_STARTS, readDiscord),
  { kind: 'telegram_bot_token', prefixes: [':A'], boundary: false, read: readTelegram },
  { kind: 'mailchimp_key', prefixes: ['-us'], boundary: false, read: readMailchimp },
];
