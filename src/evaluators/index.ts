export * from './types.js';
export * from './registry.js';
export { regexEvaluator, RegexConfigSchema, type RegexConfig } from './regex/index.js';
export { listEvaluator, ListConfigSchema, type ListConfig } from './list/index.js';
export { jsonEvaluator, JsonConfigSchema, type JsonConfig } from './json/index.js';
export { sqlEvaluator, SqlConfigSchema, type SqlConfig } from './sql/index.js';
export { piiEvaluator, PiiConfigSchema, PII_KINDS, type PiiConfig, type PiiKind } from './pii/index.js';
export { secretsEvaluator, SecretsConfigSchema, type SecretsConfig } from './secrets/index.js';
export { SECRET_KINDS, type SecretKind } from './secrets/formats.js';
export { promptInjectionEvaluator, PromptInjectionConfigSchema, INJECTION_SIGNALS, type PromptInjectionConfig, type InjectionSignal } from './prompt-injection/index.js';
export { compilePattern, type CompiledPattern } from './regex/re2.js';
export { validateJsonSchema } from './json-schema.js';
export type { PluginContext } from './load-plugins.js';
export { createAiVendorScorer, type AiVendorScorerOptions, type ScoreOperator } from './ai-vendor-scorer/index.js';
export { rateEvaluator, RateConfigSchema, type RateConfig } from './rate/index.js';
export { budgetEvaluator, BudgetConfigSchema, type BudgetConfig } from './budget/index.js';
export { repeatEvaluator, RepeatConfigSchema, type RepeatConfig } from './repeat/index.js';

