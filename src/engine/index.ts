export * from './api.js';
export { compileControls, EMPTY_CONTROL_SET, type CompiledControlSet, type CompileOptions, type SkippedControl } from './compile.js';
export { CompileCache } from './compile-cache.js';
export { evaluateStep } from './evaluate.js';
export { inSessionScope, sessionOutcome, type AddedLabel, type SessionOutcome } from './session-scope.js';
export {
  validateControlData,
  validateControlDocument,
  type DocumentValidationOutcome,
} from './validate-control.js';
export { constantRecord, constantRecordId, defaultOnError, type CompiledControl } from './build-control.js';
export { parseSelector, selectValue, StepView, type CompiledSelector } from './select.js';
