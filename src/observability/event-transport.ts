/**
 * How events cross to the writer thread (event-writer.ts): one flat array of field values,
 * FIELDS per event, instead of an array of objects. Structured clone writes every object's
 * keys and rebuilds each object property by property on the other side; a flat array of
 * strings and numbers is written and read in one pass, at a fraction of the cost on both
 * threads. The fields events of one batch share (agent, control, stage, time of one
 * evaluation...) are sent once each, in `strings`, and referred to by their index: the
 * thread then reads each text once per batch instead of once per event.
 */
import type { StoredEvent } from '../model/index.js';

/** Values per event; packEvents and unpackEvents list them in the same order. */
const FIELDS = 21;

export interface PackedEvents {
  /** The shared texts, referred to by index from `values`. */
  strings: string[];
  values: unknown[];
}

export function packEvents(events: readonly StoredEvent[]): PackedEvents {
  const strings: string[] = [];
  const indexOf = new Map<string, number>();
  // Consecutive events mostly repeat each field's text: the field's last text answers
  // without hashing.
  // Fields are told apart by the order of the calls, the same for every event.
  const lastText: Array<string | undefined> = [];
  const lastIndex: number[] = [];
  let field = 0;
  // A shared field's text as its index in `strings`; null and undefined as they are.
  const shared = (text: string | null | undefined): number | null | undefined => {
    field++;
    if (typeof text !== 'string') return text;
    if (lastText[field] === text) return lastIndex[field];
    let index = indexOf.get(text);
    if (index === undefined) {
      index = strings.push(text) - 1;
      indexOf.set(text, index);
    }
    lastText[field] = text;
    lastIndex[field] = index;
    return index;
  };
  // A time is a new string per evaluation, and the events of one evaluation are consecutive:
  // it is compared with the last time only, never hashed.
  let lastTime: string | undefined;
  let lastTimeIndex = 0;
  const time = (text: string): number => {
    if (text !== lastTime) {
      lastTime = text;
      lastTimeIndex = strings.push(text) - 1;
    }
    return lastTimeIndex;
  };
  // Filled by push: a packed array. One made with `new Array(n)` is holey, which structured
  // clone writes and reads element by element, as it would a sparse one.
  const values: unknown[] = [];
  for (const e of events) {
    field = 0;
    values.push(
      e.control_execution_id,
      e.trace_id,
      e.span_id,
      shared(e.agent_name),
      e.control_id,
      shared(e.control_name),
      shared(e.check_stage),
      shared(e.applies_to),
      shared(e.action),
      e.matched,
      e.confidence,
      time(e.timestamp),
      e.execution_duration_ms,
      shared(e.evaluator_name),
      shared(e.selector_path),
      e.error_message,
      e.metadata,
      e.selector_missing,
      shared(e.mode),
      e.set_revision,
      e.example,
    );
  }
  return { strings, values };
}

/** The events packEvents packed; throws when `packed` is not what it packs. */
export function unpackEvents(packed: PackedEvents): StoredEvent[] {
  const { strings, values } = packed;
  if (values.length % FIELDS !== 0) throw new Error(`packed events: ${values.length} values is not a multiple of ${FIELDS}`);
  const text = (value: unknown): never => {
    if (typeof value !== 'number') return value as never;
    const found = strings[value];
    if (found === undefined) throw new Error(`packed events: no shared text ${value}`);
    return found as never;
  };
  const events = new Array<StoredEvent>(values.length / FIELDS);
  // The values are what packEvents wrote, field by field: typed as `never`, each fits its field.
  const v = values as readonly unknown[] as readonly never[];
  for (let n = 0, i = 0; i < values.length; n++, i += FIELDS) {
    const event: StoredEvent = {
      control_execution_id: v[i]!,
      trace_id: v[i + 1]!,
      span_id: v[i + 2]!,
      agent_name: text(v[i + 3]),
      control_id: v[i + 4]!,
      control_name: text(v[i + 5]),
      check_stage: text(v[i + 6]),
      applies_to: text(v[i + 7]),
      action: text(v[i + 8]),
      matched: v[i + 9]!,
      confidence: v[i + 10]!,
      timestamp: text(v[i + 11]),
      execution_duration_ms: v[i + 12]!,
      evaluator_name: text(v[i + 13]),
      selector_path: text(v[i + 14]),
      error_message: v[i + 15]!,
      metadata: v[i + 16]!,
      selector_missing: v[i + 17]!,
      mode: text(v[i + 18]),
      set_revision: v[i + 19]!,
      example: v[i + 20]!,
    };
    events[n] = event;
  }
  return events;
}
