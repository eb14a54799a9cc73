/**
 * The samplers of OTEL_TRACES_SAMPLER as the OpenTelemetry specification defines them.
 * `traceidratio` decides by the trace id alone, so every service with the same ratio keeps
 * the same traces: the trace is kept when the id's 56 least significant bits (its last 14
 * hex digits, the W3C random part) are at least the rejection threshold (1 - ratio) * 2^56.
 * Fixed-width lowercase hex compares as the numbers it writes, digit by digit. PURE.
 */
import type { SamplerName } from './config.js';
import type { RemoteParent } from './trace-context.js';

/** Whether a span of trace `traceId` under `parent` (null: a new trace) is sampled. */
export type Sampler = (parent: RemoteParent | null, traceId: string) => boolean;

const RANDOM_HEX = 14;

/** The ratio sampler: never for 0, always for 1. */
export function traceIdRatioSampler(ratio: number): (traceId: string) => boolean {
  const threshold = Math.round((1 - ratio) * 2 ** 56);
  if (threshold >= 2 ** 56) return () => false;
  if (threshold <= 0) return () => true;
  const thresholdHex = threshold.toString(16).padStart(RANDOM_HEX, '0');
  const thresholdCodes = Array.from(thresholdHex, (c) => c.charCodeAt(0));
  // Digit by digit, stopping at the first that differs (most often the first): comparing
  // a slice of the id as a string costs a call into V8's runtime on every evaluation.
  return (traceId) => {
    const from = traceId.length - RANDOM_HEX;
    for (let i = 0; i < RANDOM_HEX; i++) {
      const digit = traceId.charCodeAt(from + i);
      const limit = thresholdCodes[i]!;
      if (digit !== limit) return digit > limit;
    }
    return true;
  };
}

const parentSampled = (parent: RemoteParent) => (parent.traceFlags & 1) === 1;

export function samplerOf(name: SamplerName, ratio: number): Sampler {
  const byTraceId = traceIdRatioSampler(ratio);
  switch (name) {
    case 'always_on':
      return () => true;
    case 'always_off':
      return () => false;
    case 'traceidratio':
      return (_parent, traceId) => byTraceId(traceId);
    case 'parentbased_always_on':
      return (parent) => parent === null || parentSampled(parent);
    case 'parentbased_always_off':
      return (parent) => parent !== null && parentSampled(parent);
    case 'parentbased_traceidratio':
      return (parent, traceId) => (parent === null ? byTraceId(traceId) : parentSampled(parent));
  }
}
