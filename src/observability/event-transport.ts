/**
 * How events cross to the writer thread (event-writer.ts): one flat array of field values,
 * FIELDS per event, instead of an array of objects. Structured clone writes every object's
 * keys and rebuilds each object property by property on the other side; a flat array of
 * strings and numbers is written and read in one pass, at a fraction of the cost on both
 * threads.
 */
import type { StoredEvent } from '../model/index.js';

/** Values per event; packEvents and unpackEvents list them in the same order. */
const FIELDS = 21;

export function packEvents(events: readonly StoredEvent[]): unknown[] {
  // Filled by push: a packed array. One made with `new Array(n)` is holey, which structured
  // clone writes and reads element by element, as it would a sparse one.
  const out: unknown[] = [];
  for (const e of events) {
    out.push(
      e.control_execution_id,
      e.trace_id,
      e.span_id,
      e.agent_name,
      e.control_id,
      e.control_name,
      e.check_stage,
      e.applies_to,
      e.action,
      e.matched,
      e.confidence,
      e.timestamp,
      e.execution_duration_ms,
      e.evaluator_name,
      e.selector_path,
      e.error_message,
      e.metadata,
      e.selector_missing,
      e.mode,
      e.set_revision,
      e.example,
    );
  }
  return out;
}

/** The events packEvents packed; throws when `values` is not such an array. */
export function unpackEvents(values: readonly unknown[]): StoredEvent[] {
  if (values.length % FIELDS !== 0) throw new Error(`packed events: ${values.length} values is not a multiple of ${FIELDS}`);
  const events = new Array<StoredEvent>(values.length / FIELDS);
  // The values are what packEvents wrote, field by field: typed as `never`, each fits its field.
  const v = values as readonly never[];
  for (let n = 0, i = 0; i < values.length; n++, i += FIELDS) {
    const event: StoredEvent = {
      control_execution_id: v[i]!,
      trace_id: v[i + 1]!,
      span_id: v[i + 2]!,
      agent_name: v[i + 3]!,
      control_id: v[i + 4]!,
      control_name: v[i + 5]!,
      check_stage: v[i + 6]!,
      applies_to: v[i + 7]!,
      action: v[i + 8]!,
      matched: v[i + 9]!,
      confidence: v[i + 10]!,
      timestamp: v[i + 11]!,
      execution_duration_ms: v[i + 12]!,
      evaluator_name: v[i + 13]!,
      selector_path: v[i + 14]!,
      error_message: v[i + 15]!,
      metadata: v[i + 16]!,
      selector_missing: v[i + 17]!,
      mode: v[i + 18]!,
      set_revision: v[i + 19]!,
      example: v[i + 20]!,
    };
    events[n] = event;
  }
  return events;
}
