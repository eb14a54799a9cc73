import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createAiVendorScorer, createDefaultRegistry } from '../../src/evaluators/index.js';
import type { OnError } from '../../src/model/index.js';
import { control, toolStep } from '../engine/helpers.js';

interface Seen {
  path: string;
  auth: string | undefined;
  body: unknown;
}

const seen: Seen[] = [];
let server: Server;
let base = '';
const pendingTimers = new Set<NodeJS.Timeout>();

/** Routes: /score answers {score: <score in the text>}, /slow never in time, /html a web page, /500 a failure. */
function handle(req: IncomingMessage, res: ServerResponse): void {
  let raw = '';
  req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  req.on('end', () => {
    const body = JSON.parse(raw) as { metric: string; text: string };
    seen.push({ path: req.url ?? '', auth: req.headers.authorization, body });
    if (req.url === '/slow') {
      const t = setTimeout(() => res.end(JSON.stringify({ score: 1 })), 2000);
      pendingTimers.add(t);
      res.on('close', () => clearTimeout(t));
      return;
    }
    if (req.url === '/html') {
      res.setHeader('content-type', 'text/html');
      res.end('<html>maintenance</html>');
      return;
    }
    if (req.url === '/500') {
      res.statusCode = 500;
      res.end('{}');
      return;
    }
    if (req.url === '/noscore') {
      res.end(JSON.stringify({ value: 1 }));
      return;
    }
    const score = Number(/score=([\d.]+)/.exec(body.text)?.[1] ?? 0);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ score }));
  });
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const t of pendingTimers) clearTimeout(t);
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** The operator's endpoint, plus the failing ones the tests pick with `url`. */
function scorer() {
  return createAiVendorScorer({ apiKey: 'test-key', url: `${base}/score`, allowedUrls: ['/slow', '/html', '/500', '/noscore'].map((p) => `${base}${p}`) });
}

describe('ai_vendor.scorer', () => {
  type Case = [operator: string, target: number, score: number, matched: boolean];
  const cases: Case[] = [
    ['gt', 0.5, 0.9, true],
    ['gt', 0.5, 0.5, false],
    ['gte', 0.5, 0.5, true],
    ['lt', 0.5, 0.2, true],
    ['lt', 0.5, 0.7, false],
    ['lte', 0.5, 0.5, true],
    ['eq', 0.25, 0.25, true],
    ['eq', 0.25, 0.3, false],
  ];
  it.each(cases)('score %s %s with score %s -> %s', async (operator, target_value, score, matched) => {
    const check = scorer().compile({ metric: 'toxicity', operator, target_value });
    const out = await check(`text score=${score}`);
    expect(out.matched).toBe(matched);
    expect(out.confidence).toBe(score);
  });

  it('posts {metric, text} with the bearer key', async () => {
    seen.length = 0;
    await scorer().compile({ metric: 'toxicity', operator: 'gt', target_value: 0.5 })({ msg: 'score=0.1' });
    expect(seen).toEqual([
      { path: '/score', auth: 'Bearer test-key', body: { metric: 'toxicity', text: '{"msg":"score=0.1"}' } },
    ]);
  });

  it('clamps confidence into 0..1', async () => {
    const out = (await scorer().compile({ metric: 'm', operator: 'gt', target_value: 1 })('score=7'));
    expect(out.matched).toBe(true);
    expect(out.confidence).toBe(1);
  });

  it('does not call the service when nothing is selected', async () => {
    seen.length = 0;
    const out = await scorer().compile({ metric: 'm', operator: 'gt', target_value: 0 })(undefined);
    expect(out.matched).toBe(false);
    expect(seen).toHaveLength(0);
  });

  type Failure = [path: string, error: RegExp, timeout?: number];
  const failures: Failure[] = [
    ['/slow', /timed out after 100 ms/, 100],
    ['/html', /not JSON/],
    ['/500', /HTTP 500/],
    ['/noscore', /no numeric "score"/],
  ];
  it.each(failures)('%s fails with %s', async (path, error, timeout_ms) => {
    const check = scorer().compile({ metric: 'm', operator: 'gt', target_value: 0.5, url: `${base}${path}`, ...(timeout_ms ? { timeout_ms } : {}) });
    await expect(check('x')).rejects.toThrow(error);
  });

  it('needs the server to configure an endpoint, and the config schema', () => {
    const def = createAiVendorScorer({ apiKey: 'k' });
    const registry = createDefaultRegistry({ extra: [def] });
    expect(registry.validateConfig('ai_vendor.scorer', { metric: 'm', operator: 'gt', target_value: 1 })).toEqual([
      expect.objectContaining({ field: 'evaluator.config.url', message: expect.stringContaining('GUARD_AI_VENDOR_URL') }),
    ]);
    expect(registry.validateConfig('ai_vendor.scorer', { metric: 'm', operator: 'above', target_value: '1' }).map((i) => i.field)).toEqual([
      'evaluator.config.operator',
      'evaluator.config.target_value',
    ]);
    expect(registry.validateConfig('ai_vendor.scorer', { metric: 'm', operator: 'gt', target_value: 1, url: 'not a url' })[0]!.field).toBe(
      'evaluator.config.url',
    );
  });

  describe('the endpoint belongs to the operator', () => {
    const registry = () => createDefaultRegistry({ extra: [scorer()] });
    const config = (url?: string) => ({ metric: 'm', operator: 'gt', target_value: 0.5, ...(url === undefined ? {} : { url }) });

    it('refuses a control url the operator did not allow, naming the field, and never calls it', async () => {
      seen.length = 0;
      for (const url of ['http://169.254.169.254/latest/meta-data', `${base}/elsewhere`, 'http://127.0.0.1:5432/', 'file:///etc/passwd', 'not a url']) {
        expect(registry().validateConfig('ai_vendor.scorer', config(url)), url).toEqual([
          expect.objectContaining({ field: 'evaluator.config.url', message: expect.stringMatching(/is not a scoring endpoint this server allows/) }),
        ]);
      }
      // A control that does not validate never compiles, so nothing was sent.
      const set = compileControls(
        [control('probe', { selector: { path: 'input' }, evaluator: { name: 'ai_vendor.scorer', config: config(`${base}/elsewhere`) }, action: { decision: 'deny' } })],
        registry(),
      );
      expect(set.skipped.map((s) => s.issues[0]!.field)).toEqual(['evaluator.config.url']);
      expect(seen).toHaveLength(0);
    });

    it('accepts the server endpoint (by default or named) and the allowed ones, compared as URLs', () => {
      expect(registry().validateConfig('ai_vendor.scorer', config())).toEqual([]);
      expect(registry().validateConfig('ai_vendor.scorer', config(`${base}/score`))).toEqual([]);
      expect(registry().validateConfig('ai_vendor.scorer', config(`${base}/./html`))).toEqual([]);
    });

    it('reads the endpoint and the allowed list from the environment; a bad one stops startup', async () => {
      const { default: plugin } = await import('../../src/evaluators/ai-vendor-scorer/index.js');
      const [def] = plugin({ env: { VENDOR_API_KEY: 'k', GUARD_AI_VENDOR_URL: `${base}/score`, GUARD_AI_VENDOR_ALLOWED_URLS: ` ${base}/500 , ` } });
      const check = def!.compile(config());
      seen.length = 0;
      await check('score=0.9');
      expect(seen.map((s) => s.path)).toEqual(['/score']);
      expect(() => def!.compile(config(`${base}/500`))).not.toThrow();
      expect(() => plugin({ env: { VENDOR_API_KEY: 'k', GUARD_AI_VENDOR_URL: 'ftp://x/' } })).toThrow(/GUARD_AI_VENDOR_URL: "ftp:\/\/x\/" is not an http\(s\) URL/);
      expect(() => plugin({ env: { VENDOR_API_KEY: 'k', GUARD_AI_VENDOR_ALLOWED_URLS: 'nope' } })).toThrow(/GUARD_AI_VENDOR_ALLOWED_URLS/);
    });

    it('does not follow a redirect from the endpoint', async () => {
      const redirecting = createServer((_req, res) => {
        res.statusCode = 307;
        res.setHeader('location', `${base}/score`);
        res.end();
      });
      await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/`;
        seen.length = 0;
        const check = createAiVendorScorer({ apiKey: 'k', url }).compile(config());
        await expect(check('score=0.9')).rejects.toThrow(/scorer unreachable/);
        expect(seen).toHaveLength(0);
      } finally {
        redirecting.closeAllConnections();
        await new Promise<void>((resolve) => redirecting.close(() => resolve()));
      }
    });
  });

  describe('in the engine', () => {
    // Built per test: the endpoints are known once the scoring server listens.
    const registry = () => createDefaultRegistry({ extra: [scorer()] });
    const ctl = (path: string, onError?: OnError) =>
      control(`toxic${path}`, {
        selector: { path: 'input' },
        evaluator: {
          name: 'ai_vendor.scorer',
          config: { metric: 'toxicity', operator: 'gt', target_value: 0.8, url: `${base}${path}`, timeout_ms: 100, ...(onError ? { on_error: onError } : {}) },
        },
        action: { decision: 'deny' },
      });

    it('denies a high score, allows a low one', async () => {
      const set = compileControls([ctl('/score')], registry());
      expect(set.skipped).toEqual([]);
      const high = await evaluateStep(set, toolStep('t', 'score=0.95'), 'pre');
      expect(high.result).toMatchObject({ decision: 'deny', confidence: 0.95, is_safe: false });
      const low = await evaluateStep(set, toolStep('t', 'score=0.1'), 'pre');
      expect(low.result.decision).toBe('allow');
    });

    type OnErrorCase = [path: string, onError: OnError | undefined, decision: 'allow' | 'deny'];
    const onErrorCases: OnErrorCase[] = [
      ['/slow', 'allow', 'allow'],
      ['/slow', 'deny', 'deny'],
      ['/slow', undefined, 'deny'], // deny controls fail closed by default
      ['/html', 'allow', 'allow'],
      ['/html', 'deny', 'deny'],
    ];
    it.each(onErrorCases)('%s with on_error=%s -> %s', async (path, onError, decision) => {
      const set = compileControls([ctl(path, onError)], registry());
      const { result } = await evaluateStep(set, toolStep('t', 'score=0.1'), 'pre');
      expect(result.decision).toBe(decision);
      const failed = decision === 'deny' ? result.matches[0] : result.errors[0];
      expect(failed?.error).toMatch(path === '/slow' ? /timed out/ : /not JSON/);
    });
  });
});
