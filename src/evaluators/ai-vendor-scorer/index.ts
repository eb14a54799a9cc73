/**
 * The optional `ai_vendor.scorer` evaluator (SPEC section 2), shipped as a plugin: it is
 * listed only when enabled (GUARD_AI_VENDOR_ENABLED=true, or `ai_vendor.scorer` /
 * this module's path in GUARD_EVALUATORS) and VENDOR_API_KEY is set.
 * It posts `{metric, text}` to a scoring URL with `Authorization: Bearer <key>`, reads
 * `{score: number}` and matches when `score <operator> target_value`.
 */
import { ConfigError, type EvaluatorDefinition, type EvaluatorOutcome, type PluginContext } from '../types.js';
import { textOf } from '../text.js';

export type ScoreOperator = 'gt' | 'gte' | 'lt' | 'lte' | 'eq';

export interface AiVendorScorerOptions {
  apiKey: string;
  /** Used when a control's config has no `url` (VENDOR_SCORER_URL). */
  defaultUrl?: string | undefined;
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
        url: { type: 'string', minLength: 1, description: 'Scoring endpoint; default VENDOR_SCORER_URL' },
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
      const url = (config.url as string | undefined) ?? options.defaultUrl;
      if (url === undefined || url === '') {
        throw new ConfigError('url', 'no scoring URL: set url in the config or VENDOR_SCORER_URL on the server');
      }
      if (!URL.canParse(url)) throw new ConfigError('url', `"${url}" is not an absolute URL`);
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

/** The plugin entry: nothing unless VENDOR_API_KEY is set. */
export default function aiVendorScorerPlugin(context: PluginContext): EvaluatorDefinition[] {
  const apiKey = context.env.VENDOR_API_KEY;
  if (!apiKey) return [];
  return [createAiVendorScorer({ apiKey, defaultUrl: context.env.VENDOR_SCORER_URL })];
}
