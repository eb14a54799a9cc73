import type { RecordingStore } from '../store/types.js';
import { StepRecorder } from './recorder.js';

/** The server settings step recording reads (GUARD_RECORD_*; see src/server/config.ts). */
export interface RecordingConfig {
  readonly recordSteps: boolean;
  readonly recordSampleRate: number;
  readonly recordMaxStepBytes: number;
  readonly recordRetentionDays: number;
  readonly recordRedact: readonly string[];
  readonly flushIntervalSeconds: number;
}

/** The server's recorder, or null when GUARD_RECORD_STEPS is off (nothing on the hot path). */
export function recorderFromConfig(store: RecordingStore, config: RecordingConfig, onError?: (error: unknown) => void): StepRecorder | null {
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
