export { StepRecorder, type RecorderOptions, type RecorderStats, type RecordInput } from './recorder.js';
export { createRedactor, DEFAULT_REDACT_NAMES, REDACTED, type Redactor } from './redact.js';
export { recorderFromConfig } from './from-config.js';
