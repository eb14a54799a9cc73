/**
 * The optional `ai_vendor.scorer` evaluator (SPEC section 2), shipped as a plugin: it is
 * listed only when enabled (GUARD_AI_VENDOR_ENABLED=true, or `ai_vendor.scorer` /
 * this module's path in GUARD_EVALUATORS) and VENDOR_API_KEY is set.
 * It posts `{metric, text}` to the scoring endpoint with `Authorization: Bearer <key>`,
 * reads `{score: number}` and matches when `score <operator> target_value`.
 *
 * The endpoint belongs to the operator, not to whoever writes controls: it receives the
 * vendor credential and the steps' text, so a control choosing it could send both anywhere
 * the server can reach (and probe that network). It comes from the server's environment
 * (GUARD_AI_VENDOR_URL); a control's `url` may only pick one of the endpoints the operator
 * listed (GUARD_AI_VENDOR_ALLOWED_URLS), and anything else is refused when the control is
 * validated. Redirects are not followed.
 */
import { ConfigError, type EvaluatorDefinition, type EvaluatorOutcome } from '../types.js';
import { textOf } from '../text.js';
import type { PluginContext } from '../load-plugins.js';

export type ScoreOperator = 'gt' | 'gte' | 'lt' | 'lte' | 'eq';

export interface AiVendorScorerOptions {
  apiKey: string;
  /** The scoring endpoint (GUARD_AI_VENDOR_URL), used when a control's config has no `url`. */
  url?: string | undefined;
  /** Further endpoints a control's `url` may name (GUARD_AI_VENDOR_ALLOWED_URLS). */
  allowedUrls?: readonly string[];
  /** Used when a control's config has no `timeout_ms`. */
  defaultTimeoutMs?: number;
}

const OPERATORS: Record<ScoreOperator, (score: number, target: number) => boolean> = {
  gt: (s, t) => s > t,
  gte: (s, t) => s >= t,
  lt: (s, t) => s < t,
  lte: (s, t) => s <= t,
  eq: (s, t) => s === t,
};

const NOTHING: EvaluatorOutcome = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });

export function createAiVendorScorer(options: AiVendorScorerOptions): EvaluatorDefinition {
  const defaultTimeout = options.defaultTimeoutMs ?? 5000;
  const serverUrl = options.url === undefined || options.url === '' ? undefined : endpointOf(options.url, 'GUARD_AI_VENDOR_URL');
  const allowed = new Set((options.allowedUrls ?? []).map((u) => endpointOf(u, 'GUARD_AI_VENDOR_ALLOWED_URLS')));
  if (serverUrl !== undefined) allowed.add(serverUrl);
  return {
    name: 'ai_vendor.scorer',
    description:
      'Sends the selected text to an AI scoring service and matches when the returned score ' +
      'compares to target_value with operator (gt, gte, lt, lte, eq).',
    configSchema: {
      type: 'object',
      properties: {
        metric: { type: 'string', minLength: 1, description: 'Metric name, for example toxicity' },
        operator: { type: 'string', enum: ['gt', 'gte', 'lt', 'lte', 'eq'] },
        target_value: { type: 'number' },
        url: {
          type: 'string',
          minLength: 1,
          description: 'One of the scoring endpoints the server allows (GUARD_AI_VENDOR_ALLOWED_URLS); default GUARD_AI_VENDOR_URL',
        },
        timeout_ms: { type: 'integer', minimum: 1, maximum: 60000, description: `Default ${defaultTimeout}` },
      },
      required: ['metric', 'operator', 'target_value'],
      additionalProperties: false,
    },
    compile(config) {
      const metric = config.metric as string;
      const operator = config.operator as ScoreOperator;
      const target = config.target_value as number;
      const timeoutMs = (config.timeout_ms as number | undefined) ?? defaultTimeout;
      const url = endpointFor(config.url as string | undefined, serverUrl, allowed);
      const compare = OPERATORS[operator];
      const headers = { 'content-type': 'application/json', authorization: `Bearer ${options.apiKey}` };

      return async (value) => {
        const text = textOf(value);
        if (text === undefined) return NOTHING;
        const response = await fetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify({ metric, text }),
          signal: AbortSignal.timeout(timeoutMs),
          // The operator chose the endpoint; a redirect would let it hand the key and the text on.
          redirect: 'error',
        }).catch((err: unknown) => {
          const name = err instanceof Error ? err.name : '';
          if (name === 'TimeoutError' || name === 'AbortError') throw new Error(`scorer timed out after ${timeoutMs} ms`);
          throw new Error(`scorer unreachable: ${err instanceof Error ? err.message : String(err)}`);
        });
        if (!response.ok) throw new Error(`scorer answered HTTP ${response.status}`);
        let body: unknown;
        try {
          body = await response.json();
        } catch {
          throw new Error('scorer answered with a body that is not JSON');
        }
        const score = (body as { score?: unknown } | null)?.score;
        if (typeof score !== 'number' || !Number.isFinite(score)) {
          throw new Error('scorer answer has no numeric "score"');
        }
        const matched = compare(score, target);
        return {
          matched,
          confidence: Math.min(1, Math.max(0, score)),
          message: `${metric} score ${score} ${operator} ${target}: ${matched ? 'true' : 'false'}`,
          metadata: { metric, score },
        };
      };
    },
  };
}

/** An endpoint from the operator's configuration, normalised; a bad one stops startup. */
function endpointOf(url: string, variable: string): string {
  if (!URL.canParse(url)) throw new Error(`${variable}: "${url}" is not an absolute URL`);
  const parsed = new URL(url);
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new Error(`${variable}: "${url}" is not an http(s) URL`);
  return parsed.href;
}

/** The endpoint a control's config asks for: the server's, or one the operator allows. */
function endpointFor(configUrl: string | undefined, serverUrl: string | undefined, allowed: ReadonlySet<string>): string {
  if (configUrl === undefined) {
    if (serverUrl === undefined) throw new ConfigError('url', 'no scoring endpoint: the operator sets GUARD_AI_VENDOR_URL on the server');
    return serverUrl;
  }
  const href = URL.canParse(configUrl) ? new URL(configUrl).href : null;
  if (href === null || !allowed.has(href)) {
    const choices = allowed.size === 0 ? 'none is configured' : `allowed: ${[...allowed].join(', ')}`;
    throw new ConfigError(
      'url',
      `"${configUrl}" is not a scoring endpoint this server allows (${choices}); the operator sets them with GUARD_AI_VENDOR_URL and GUARD_AI_VENDOR_ALLOWED_URLS, or leave url out`,
    );
  }
  return href;
}

/** Comma-separated endpoints, blanks ignored. */
function listOf(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** The plugin entry: nothing unless VENDOR_API_KEY is set. */
export default function aiVendorScorerPlugin(context: PluginContext): EvaluatorDefinition[] {
  const apiKey = context.env.VENDOR_API_KEY;
  if (!apiKey) return [];
  return [
    createAiVendorScorer({
      apiKey,
      url: context.env.GUARD_AI_VENDOR_URL,
      allowedUrls: listOf(context.env.GUARD_AI_VENDOR_ALLOWED_URLS),
    }),
  ];
}
