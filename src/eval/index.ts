export * from './types.js';
export { parseCase, type KnownNames, type ParsedLine } from './dataset.js';
export { runEval, type CaseEvaluator, type CaseResult, type RunEvalOptions } from './run.js';
export { inProcessEvaluator, type InProcessInput } from './in-process.js';
export { serverEvaluator } from './server-evaluator.js';
export { readLines } from './read-lines.js';
export { LIST_MAX, DECISION_ROW } from './tally.js';
