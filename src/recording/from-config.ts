import type { ServerConfig } from '../server/config.js';
import type { Store } from '../store/types.js';
import { StepRecorder } from './recorder.js';

/** The server's recorder, or null when GUARD_RECORD_STEPS is off (nothing on the hot path). */
export function recorderFromConfig(store: Store, config: ServerConfig, onError?: (error: unknown) => void): StepRecorder | null {
  if (!config.recordSteps) return null;
  return new StepRecorder(store, {
    sampleRate: config.recordSampleRate,
    maxStepBytes: config.recordMaxStepBytes,
    retentionDays: config.recordRetentionDays,
    redact: config.recordRedact,
    flushIntervalMs: Math.max(50, config.flushIntervalSeconds * 1000),
    onError,
  }).start();
}
