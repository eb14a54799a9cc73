export * from './types.js';
export * from './registry.js';
export { regexEvaluator, RegexConfigSchema, type RegexConfig } from './regex/index.js';
export { listEvaluator, ListConfigSchema, type ListConfig } from './list/index.js';
export { compilePattern, type CompiledPattern } from './regex/re2.js';
export { validateJsonSchema } from './json-schema.js';
export type { PluginContext } from './load-plugins.js';
export { createAiVendorScorer, type AiVendorScorerOptions, type ScoreOperator } from './ai-vendor-scorer/index.js';
