/**
 * How events cross to the writer thread (event-writer.ts): every field of every event as a
 * number in one Float64Array, texts as indexes into one list of strings, instead of an
 * array of objects. Structured clone writes every object's keys and rebuilds each object
 * property by property on the other side; it writes and reads a list of values value by
 * value, at a dispatch per value; a typed array it copies as one block of bytes. What is
 * left value by value is the list of texts, and the texts events of one batch share
 * (agent, control, stage, the time and trace of one evaluation...) are in it once each.
 */
import type { StoredEvent } from '../model/index.js';

/** Numbers per event; packEvents and unpackEvents list the fields in the same order. */
const FIELDS = 21;
/** A text field (or set_revision, or selector_missing) that is null, and one that is absent. */
const NULL = -1;
const ABSENT = -2;

export interface PackedEvents {
  /** The texts the events hold, referred to by index from `numbers`. */
  strings: string[];
  /** FIELDS numbers per event. */
  numbers: Float64Array;
  /** The events' metadata objects, referred to by index. */
  objects: Array<Record<string, unknown>>;
}

/** A number as it is; null and absent as their marks. */
function marked(value: number | null | undefined): number {
  return value === null ? NULL : value === undefined ? ABSENT : value;
}

/** What `marked` wrote. */
function unmarked(n: number): number | null | undefined {
  return n === NULL ? null : n === ABSENT ? undefined : n;
}

export function packEvents(events: readonly StoredEvent[]): PackedEvents {
  const strings: string[] = [];
  const objects: Array<Record<string, unknown>> = [];
  const indexOf = new Map<string, number>();
  // Fields are told apart by the order of the calls, the same for every event.
  const lastText: Array<string | null | undefined> = [];
  const lastIndex: number[] = [];
  let field = 0;
  // A text that many events share (agent, control, stage...): consecutive events mostly
  // repeat the field's last text, which answers without hashing; others are looked up.
  const shared = (text: string | null | undefined): number => {
    field++;
    if (typeof text !== 'string') return marked(text);
    if (lastText[field] === text) return lastIndex[field]!;
    let index = indexOf.get(text);
    if (index === undefined) {
      index = strings.push(text) - 1;
      indexOf.set(text, index);
    }
    lastText[field] = text;
    lastIndex[field] = index;
    return index;
  };
  // A text only consecutive events share (the time and trace of one evaluation): compared
  // with the field's last text only, never hashed.
  const consecutive = (text: string): number => {
    field++;
    if (lastText[field] !== text) {
      lastText[field] = text;
      lastIndex[field] = strings.push(text) - 1;
    }
    return lastIndex[field]!;
  };
  // A text of one event alone (its id, an error).
  const own = (text: string | null | undefined): number => (typeof text === 'string' ? strings.push(text) - 1 : marked(text));
  const numbers = new Float64Array(events.length * FIELDS);
  let i = 0;
  for (const e of events) {
    field = 0;
    numbers[i++] = own(e.control_execution_id);
    numbers[i++] = consecutive(e.trace_id);
    numbers[i++] = consecutive(e.span_id);
    numbers[i++] = shared(e.agent_name);
    numbers[i++] = e.control_id;
    numbers[i++] = shared(e.control_name);
    numbers[i++] = shared(e.check_stage);
    numbers[i++] = shared(e.applies_to);
    numbers[i++] = shared(e.action);
    numbers[i++] = e.matched ? 1 : 0;
    numbers[i++] = e.confidence;
    numbers[i++] = consecutive(e.timestamp);
    numbers[i++] = e.execution_duration_ms;
    numbers[i++] = shared(e.evaluator_name);
    numbers[i++] = shared(e.selector_path);
    numbers[i++] = own(e.error_message);
    numbers[i++] = e.metadata === null ? NULL : objects.push(e.metadata) - 1;
    numbers[i++] = e.selector_missing === undefined ? ABSENT : e.selector_missing ? 1 : 0;
    numbers[i++] = shared(e.mode);
    numbers[i++] = marked(e.set_revision);
    numbers[i++] = own(e.example);
  }
  return { strings, numbers, objects };
}

/** The events packEvents packed; throws when `packed` is not what it packs. */
export function unpackEvents(packed: PackedEvents): StoredEvent[] {
  const { strings, numbers: v, objects } = packed;
  if (!(v instanceof Float64Array)) throw new Error('packed events: the numbers are not a Float64Array');
  if (v.length % FIELDS !== 0) throw new Error(`packed events: ${v.length} numbers is not a multiple of ${FIELDS}`);
  // The decoders are typed `never` so that each fits the field it fills; what they return
  // is what packEvents encoded for that field.
  const entry = <T>(list: readonly T[], index: number, what: string): never => {
    const found = list[index];
    if (found === undefined) throw new Error(`packed events: no ${what} ${index}`);
    return found as never;
  };
  const text = (n: number): never => {
    const index = unmarked(n);
    return (index === null || index === undefined ? index : entry(strings, index, 'text')) as never;
  };
  const events = new Array<StoredEvent>(v.length / FIELDS);
  for (let n = 0, i = 0; i < v.length; n++, i += FIELDS) {
    events[n] = {
      control_execution_id: text(v[i]!),
      trace_id: text(v[i + 1]!),
      span_id: text(v[i + 2]!),
      agent_name: text(v[i + 3]!),
      control_id: v[i + 4]!,
      control_name: text(v[i + 5]!),
      check_stage: text(v[i + 6]!),
      applies_to: text(v[i + 7]!),
      action: text(v[i + 8]!),
      matched: v[i + 9] === 1,
      confidence: v[i + 10]!,
      timestamp: text(v[i + 11]!),
      execution_duration_ms: v[i + 12]!,
      evaluator_name: text(v[i + 13]!),
      selector_path: text(v[i + 14]!),
      error_message: text(v[i + 15]!),
      metadata: v[i + 16] === NULL ? null : entry(objects, v[i + 16]!, 'metadata object'),
      selector_missing: v[i + 17] === ABSENT ? undefined : v[i + 17] === 1,
      mode: text(v[i + 18]!),
      set_revision: unmarked(v[i + 19]!),
      example: text(v[i + 20]!),
    };
  }
  return events;
}
