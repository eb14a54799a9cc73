/** Text helpers shared by evaluators and the engine. */
import type { ValueMemo } from './types.js';

/** Shortens text for messages and excerpts, marking the cut. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * The text a string-based evaluator looks at: strings as they are, anything else as
 * JSON (so `*` and whole objects can be searched); undefined when nothing was selected.
 */
export function textOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/**
 * The per-step ValueMemo the engine hands to checks (see types.ts). Two slots each for
 * objects and texts rather than maps: a step's controls select only a few distinct values,
 * and a slot compare costs less than a map, so a step whose values are used once pays
 * almost nothing for the memo.
 */
export class TextMemo implements ValueMemo {
  #obj0: object | undefined;
  #json0 = '';
  #obj1: object | undefined;
  #json1 = '';
  #text0: string | undefined;
  #low0 = '';
  #text1: string | undefined;
  #low1 = '';
  #utfText: string | undefined;
  #utf: Buffer | undefined;

  text(value: unknown): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value === 'string') return value;
    if (typeof value !== 'object') return JSON.stringify(value);
    if (value === this.#obj0) return this.#json0;
    if (value === this.#obj1) return this.#json1;
    const json = JSON.stringify(value);
    // The newer entry takes slot 0; the older moves to slot 1.
    this.#obj1 = this.#obj0;
    this.#json1 = this.#json0;
    this.#obj0 = value;
    this.#json0 = json;
    return json;
  }

  utf8(text: string): Buffer {
    if (text !== this.#utfText || this.#utf === undefined) {
      this.#utf = Buffer.from(text, 'utf8');
      this.#utfText = text;
    }
    return this.#utf;
  }

  lower(text: string): string {
    if (text === this.#text0) return this.#low0;
    if (text === this.#text1) return this.#low1;
    const low = text.toLowerCase();
    this.#text1 = this.#text0;
    this.#low1 = this.#low0;
    this.#text0 = text;
    this.#low0 = low;
    return low;
  }
}
