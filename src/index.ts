/**
 * The library behind the `guardctl` binary, for embedding: the model (zod schemas), the
 * pure engine, the evaluator registry, the stores, the server factory and the REST client.
 * Agents import `guardctl/sdk` instead.
 */
export * from './model/index.js';
export { compileControls, evaluateStep, validateControlData, validateControlDocument } from './engine/index.js';
export type { CompiledControlSet } from './engine/index.js';
export type { ControlInput, EvaluateOptions, EvaluationOutcome, ControlExecution } from './engine/api.js';
export { EvaluatorRegistry, createDefaultRegistry, loadEvaluatorPlugins } from './evaluators/registry.js';
export type { EvaluatorDefinition, EvaluatorOutcome, CompiledCheck } from './evaluators/types.js';
export { ConfigError } from './evaluators/types.js';
export { openStore } from './store/open-store.js';
export type { Store } from './store/types.js';
export { StoreError } from './store/types.js';
export { buildApp } from './server/app.js';
export { loadConfig, type ServerConfig } from './server/config.js';
export { startServer } from './server/start.js';
export { GuardClient } from './client/index.js';
export { ApiError, UserError } from './errors.js';
