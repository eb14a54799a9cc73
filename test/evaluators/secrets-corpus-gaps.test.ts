// The gaps of the secrets evaluator that the detect-secrets corpus (eval/secrets-detect-secrets.jsonl)
// showed, each with true examples, near misses and bypass variants: GitLab tokens of a fixed
// length, unsigned JWTs, Discord and Telegram bot tokens, Mailchimp keys, test.pypi.org tokens,
// repeated-unit placeholders. The credentials are made up in the documented shapes.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { secretsEvaluator, type EvaluatorOutcome } from '../../src/evaluators/index.js';
import { isPlaceholder } from '../../src/evaluators/secrets/checks.js';

const run = (value: string, config: object = {}) => secretsEvaluator.compile(config as never)(value) as EvaluatorOutcome;
const found = (value: string, config: object = {}) => run(value, config).found ?? [];

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Random-looking characters of `chars`, the same on every run (SHA-256 of a counter). */
let drawn = 0;
function rnd(n: number, chars = B64URL): string {
  let out = '';
  while (out.length < n) for (const b of createHash('sha256').update(`secrets-corpus-gaps/${drawn++}`).digest()) out += chars[b % chars.length];
  return out.slice(0, n);
}
const HEX = '0123456789abcdef';
const DIGITS = '0123456789';
const b64url = (s: string) => Buffer.from(s).toString('base64url');

describe('GitLab tokens generated at a fixed length', () => {
  it.each([
    ['glimt-', 25],
    ['glptt-', 40],
    ['gloas-', 64],
  ])('%s and exactly %i characters; one more or one less is not one', (prefix, length) => {
    const token = `${prefix}${rnd(length)}`;
    expect(found(`token: ${token}.`)).toEqual([token]);
    expect(run(`token: ${prefix}${rnd(length + 1)}`).matched).toBe(false);
    expect(run(`token: ${prefix}${rnd(length - 1)}`).matched).toBe(false);
  });

  it('agent tokens (glagent-, 50+) and runner registration tokens (GR1348941, 20-50)', () => {
    const agent = `glagent-${rnd(60)}`;
    const registration = `GR1348941${rnd(20)}`;
    expect(found(`${agent} ${registration}`)).toEqual([agent, registration]);
    expect(run(`glagent-${rnd(49)}`).matched).toBe(false);
    expect(run(`GR1348941${rnd(19)}`).matched).toBe(false);
    expect(run(`xGR1348941${rnd(20)}`).matched).toBe(false);
  });

  it('personal access tokens keep their open length (routable tokens are longer than 50)', () => {
    const routable = `glpat-${rnd(27)}.01.${rnd(9)}`;
    expect(found(routable)).toEqual([routable]);
  });
});

describe('unsigned JWTs (header.payload)', () => {
  const header = b64url('{"alg":"HS256","typ":"JWT"}');
  const payload = b64url(`{"sub":"${rnd(10)}","iat":1516239022}`);

  it('a header with alg and a payload that is a JSON object', () => {
    expect(found(`token ${header}.${payload} end`)).toEqual([`${header}.${payload}`]);
    const crlf = b64url('{"typ":"JWT",\r\n"alg":"HS256"}');
    expect(found(`${crlf}.${payload}`)).toEqual([`${crlf}.${payload}`]);
  });

  it('not a JWT: the payload is not a JSON object, or the header has no alg', () => {
    expect(run(`${header}.${b64url('not json at all')}`).matched).toBe(false);
    expect(run(`${header}.${b64url('[1,2,3]')}`).matched).toBe(false);
    expect(run(`${b64url('{"typ":"JWT"}')}.${payload}`).matched).toBe(false);
    expect(run(header).matched).toBe(false);
  });

  it('bypass: split by a zero-width space, inside escaped JSON', () => {
    const token = `${header}.${payload}`;
    expect(run(`${token.slice(0, 10)}\u200b${token.slice(10)}`).matched).toBe(true);
    expect(found(JSON.stringify(JSON.stringify({ auth: token })))).toEqual([token]);
  });
});

describe('Discord bot tokens', () => {
  const id = b64url(`${rnd(1, '123456789')}${rnd(17, DIGITS)}`);
  it('base64 of the bot id, 6 characters, 27-38 characters', () => {
    for (const last of [27, 38]) {
      const token = `${id}.${rnd(6)}.${rnd(last)}`;
      expect(found(`DISCORD_TOKEN=${token}`)).toEqual([token]);
      expect(run(token).message).toBe('found discord_token (1)');
    }
  });
  it('near misses: a part of another length, a first part that is not a decimal id, inside a word', () => {
    expect(run(`${id}.${rnd(7)}.${rnd(27)}`).matched).toBe(false);
    expect(run(`${id}.${rnd(6)}.${rnd(26)}`).matched).toBe(false);
    expect(run(`${b64url('abcdefghijklmnopqr')}.${rnd(6)}.${rnd(27)}`).matched).toBe(false);
    expect(run(`x${id}.${rnd(6)}.${rnd(27)}`).matched).toBe(false);
  });
});

describe('Telegram bot tokens', () => {
  it('the bot id (6-12 digits), ":A" and 34 characters; the id reported with the token', () => {
    const token = `${rnd(10, DIGITS)}:A${rnd(34)}`;
    expect(found(`bot token ${token}`)).toEqual([token]);
    expect(found(JSON.stringify({ telegram: token }))).toEqual([token]);
  });
  it('near misses: a word before the id, too few digits, a body of another length', () => {
    const body = `A${rnd(34)}`;
    expect(run(`bot${rnd(9, DIGITS)}:${body}`).matched).toBe(false);
    expect(run(`${rnd(5, DIGITS)}:${body}`).matched).toBe(false);
    expect(run(`${rnd(9, DIGITS)}:A${rnd(33)}`).matched).toBe(false);
    expect(run(`arn:aws:sns:eu-west-1:111122223333:${rnd(35)}`).matched).toBe(false);
  });
});

describe('Mailchimp API keys', () => {
  it('32 lower-case hex characters, -us and the datacenter', () => {
    const key = `${rnd(32, HEX)}-us${rnd(2, DIGITS)}`;
    expect(found(`apikey: "${key}"`)).toEqual([key]);
  });
  it('near misses: upper-case hex, no -us, a longer hex run; the documented SDK example key', () => {
    expect(run(`${rnd(32, HEX).toUpperCase()}-us2`).matched).toBe(false);
    expect(run(`${rnd(32, HEX)}-2`).matched).toBe(false);
    expect(run(`${rnd(40, HEX)}-us2`).matched).toBe(false);
    const documented = 'MailchimpSDK.initialize(token: 3012a5754bbd716926f99c028f7ea428-us18)';
    expect(run(documented).matched).toBe(false);
    expect(run(documented, { allow_placeholders: false }).matched).toBe(true);
  });
});

describe('PyPI tokens', () => {
  it('pypi.org and test.pypi.org macaroons of 70+ characters past the prefix; a truncated one is not one', () => {
    for (const prefix of ['pypi-AgEIcHlwaS5vcmc', 'pypi-AgENdGVzdC5weXBpLm9yZw']) {
      const token = `${prefix}${rnd(120)}`;
      expect(found(`password = ${token}`)).toEqual([token]);
      expect(run(`${prefix}${rnd(68)}`).matched).toBe(false);
    }
  });
});

describe('placeholders: a short unit repeated', () => {
  it('123123…, abab… are placeholders; random tokens are not', () => {
    expect(isPlaceholder('GR134894112312312312312312312')).toBe(true);
    expect(isPlaceholder(`glpat-${'ab12'.repeat(6)}`)).toBe(true);
    expect(run('GR134894112312312312312312312').matched).toBe(false);
    expect(run('GR134894112312312312312312312', { allow_placeholders: false }).matched).toBe(true);
    // Without x and X: a random `XXXx` is the placeholder word xxxx (about 2 tokens in 100,000).
    const noX = B64URL.replace(/x/gi, '');
    for (let i = 0; i < 2000; i++) expect(isPlaceholder(`glpat-${rnd(20, noX)}`)).toBe(false);
  });
});

describe('Slack bot, user, app tokens: digit groups, then the secret part', () => {
  const ALNUM = B64URL.slice(0, 62);
  it('xoxb-<team>-<bot>-<24>, xoxp-<team>-<user>-<id>-<32 hex>; rotating xoxe tokens as before', () => {
    const bot = `xoxb-${rnd(10, DIGITS)}-${rnd(13, DIGITS)}-${rnd(24, ALNUM)}`;
    const user = `xoxp-${rnd(12, DIGITS)}-${rnd(12, DIGITS)}-${rnd(12, DIGITS)}-${rnd(32, HEX)}`;
    const rotating = `xoxe.xoxp-1-${rnd(60, ALNUM)}`;
    expect(found(`${bot} ${user} ${rotating}`)).toEqual([bot, user, rotating]);
    expect(found(`SLACK=${bot.slice(0, 12)}\u200b${bot.slice(12)}`)).toEqual([`${bot.slice(0, 12)}\u200b${bot.slice(12)}`]);
  });
  it('not tokens: no digit group, only short groups, a short or missing last part, words after', () => {
    for (const text of [
      'xoxb-xoxb-my-bot-token',
      'xoxb-abcdef-abcdef',
      'xoxb-12345-abcd234',
      `xoxp-1234-1234-1234-${rnd(32, HEX)}`,
      `xoxp-${rnd(12, DIGITS)}-${rnd(12, DIGITS)}-${rnd(12, DIGITS)}-####################`,
      `xoxb-${rnd(10, DIGITS)}-${rnd(24, ALNUM)}-and-more`,
    ]) {
      expect(run(text, { allow_placeholders: false }).matched, text).toBe(false);
    }
  });
});

describe('PEM private key blocks without key material', () => {
  const body = Array.from({ length: 3 }, () => rnd(64, `${B64URL.slice(0, 62)}+/`)).join('\n');
  it('a block with base64 lines, and a header alone (maybe cut off), are keys', () => {
    const block = `-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----`;
    expect(found(`key:\n${block}\n`)).toEqual([block]);
    expect(run('-----BEGIN EC PRIVATE KEY-----').matched).toBe(true);
  });
  it('an empty block or one of words is a placeholder: skipped, flagged with allow_placeholders: false', () => {
    for (const text of [
      '-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----',
      '-----BEGIN OPENSSH PRIVATE KEY----------END OPENSSH PRIVATE KEY-----',
      '-----BEGIN RSA PRIVATE KEY-----\nsuper secret private key here\n-----END RSA PRIVATE KEY-----',
    ]) {
      expect(run(text).matched, text).toBe(false);
      expect(run(text, { allow_placeholders: false }).matched, text).toBe(true);
    }
  });
});
