export { StepRecorder, type RecorderOptions, type RecorderStats, type RecordInput } from './recorder.js';
export { createRedactor, isSecretName, REDACTED, SECRET_WORD_PAIRS, SECRET_WORDS, type Redactor, type RedactorOptions } from './redact.js';
export { recorderFromConfig } from './from-config.js';
export { maskSecretsIn } from './value-masks.js';
