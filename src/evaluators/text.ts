/** Text helpers shared by evaluators and the engine. */

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
