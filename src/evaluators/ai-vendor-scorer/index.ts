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
import { z } from 'zod';
import { ConfigError, type EvaluatorDefinition, type EvaluatorOutcome, type PluginContext } from '../types.js';
import { textOf } from '../text.js';

export const AiVendorScorerConfigSchema = z.strictObject({
  metric: z.string().min(1).describe('Metric name, for example toxicity'),
  operator: z.enum(['gt', 'gte', 'lt', 'lte', 'eq']).describe('How the score compares to target_value'),
  target_value: z.number(),
  url: z
    .string()
    .min(1)
    .optional()
    .describe('One of the scoring endpoints the server allows (GUARD_AI_VENDOR_ALLOWED_URLS); default GUARD_AI_VENDOR_URL'),
  timeout_ms: z.number().int().min(1).max(60000).optional().describe('Default 5000, or what the server sets'),
});
export type AiVendorScorerConfig = z.infer<typeof AiVendorScorerConfigSchema>;
export type ScoreOperator = AiVendorScorerConfig['operator'];

export const AI_VENDOR_SCORER_NAME = 'ai_vendor.scorer';
export const AI_VENDOR_SCORER_DESCRIPTION =
  'Sends the selected text to an AI scoring service and matches when the returned score ' +
  'compares to target_value with operator (gt, gte, lt, lte, eq).';
/** The config's JSON Schema: the same whether or not the plugin is enabled (`guardctl schema` shows it). */
export const AI_VENDOR_SCORER_CONFIG_SCHEMA = z.toJSONSchema(AiVendorScorerConfigSchema, { io: 'input' });

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
    name: AI_VENDOR_SCORER_NAME,
    description: AI_VENDOR_SCORER_DESCRIPTION,
    configSchema: AI_VENDOR_SCORER_CONFIG_SCHEMA,
    zodSchema: AiVendorScorerConfigSchema,
    compile(config) {
      const { metric, operator, target_value: target, timeout_ms, url: configUrl } = AiVendorScorerConfigSchema.parse(config);
      const timeoutMs = timeout_ms ?? defaultTimeout;
      const url = endpointFor(configUrl, serverUrl, allowed);
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
