/**
 * Compiled parts shared by every control set compiled through one cache (a server keeps
 * one for all its agents): a control linked to many agents is compiled once, and controls
 * that repeat a step-name list, a selector path or a regex pattern hold one copy of it.
 *
 * Entries are weak: a part lives exactly as long as some compiled set holds it, so the
 * cache never keeps a replaced or deleted control alive and needs no invalidation (a
 * changed control has a different key). Sharing is safe because compiled parts are
 * immutable and checks keep no state between calls. A cache serves one evaluator registry.
 */
import { createHash } from 'node:crypto';
import type { PartCache, PartCaches } from '../evaluators/types.js';
import type { CompiledControl } from './compiled.js';
import type { CompiledPattern } from '../evaluators/regex/re2.js';
import type { CompiledSelector } from './select.js';
import type { ControlInput } from './api.js';

/** Below this many entries, dead ones are not worth a sweep. */
const MIN_SWEEP = 256;

/**
 * Parts of one kind by key, held weakly. Keys are strings that already exist (a pattern,
 * a path, a digest): a key built by concatenation would be kept as a chain of pieces.
 */
export class WeakParts<T extends object> {
  readonly #refs = new Map<string, WeakRef<T>>();
  /** Entry count at which dead entries are next swept: twice what the last sweep kept, so sweeping costs O(1) per entry added. */
  #sweepAt = MIN_SWEEP;

  /** The live part kept under `key`, if any. */
  find(key: string): T | undefined {
    return this.#refs.get(key)?.deref();
  }

  /** Keeps `part` under `key` for as long as anything else holds it; returns it. */
  keep(key: string, part: T): T {
    this.#refs.set(key, new WeakRef(part));
    if (this.#refs.size >= this.#sweepAt) this.#sweep();
    return part;
  }

  /** Entries held, dead ones included until the next sweep (for tests). */
  get size(): number {
    return this.#refs.size;
  }

  /** How many kept parts are still alive (for tests). */
  get live(): number {
    let n = 0;
    for (const ref of this.#refs.values()) if (ref.deref() !== undefined) n++;
    return n;
  }

  #sweep(): void {
    for (const [key, ref] of this.#refs) if (ref.deref() === undefined) this.#refs.delete(key);
    this.#sweepAt = Math.max(MIN_SWEEP, this.#refs.size * 2);
  }
}

/** What an evaluator's compile gets: its own WeakParts, any part type (the evaluator keys them). */
class EvaluatorParts implements PartCache {
  readonly #parts = new WeakParts<object>();

  share<T extends object>(key: string, make: () => T): T {
    // The evaluator stores one kind of part per key, so what it finds is what it made.
    const found = this.#parts.find(key) as T | undefined;
    if (found !== undefined) return found;
    const part = make();
    this.#parts.keep(key, part);
    return part;
  }
}

export class CompileCache implements PartCaches {
  /** Compiled controls by controlKey. */
  readonly controls = new WeakParts<CompiledControl>();
  /** step_names sets by stepNamesKey. */
  readonly stepNames = new WeakParts<ReadonlySet<string>>();
  /** Selectors by path. */
  readonly selectors = new WeakParts<CompiledSelector>();
  /** step_name_regex programs by pattern. */
  readonly stepNameRegexes = new WeakParts<CompiledPattern>();
  readonly #evaluators = new Map<string, EvaluatorParts>();

  forEvaluator(name: string): PartCache {
    let parts = this.#evaluators.get(name);
    if (!parts) this.#evaluators.set(name, (parts = new EvaluatorParts()));
    return parts;
  }
}

/**
 * A control's key: a digest of everything its compiled form is built from, so an edited
 * control (even one edited twice within a timestamp's resolution) never matches its old
 * compiled form. 144 bits of SHA-256: collisions are out of reach, and the key is short.
 */
export function controlKey(input: ControlInput): string {
  const json = JSON.stringify([input.control_id, input.name, input.data]);
  return createHash('sha256').update(json).digest().subarray(0, 18).toString('base64');
}

/** Sorted: a step-name set only answers membership, so list order does not matter. */
export function stepNamesKey(names: readonly string[]): string {
  return JSON.stringify(names.length > 1 ? [...names].sort() : names);
}
