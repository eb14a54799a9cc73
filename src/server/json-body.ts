import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpProblem } from './problem.js';

/** JSON nested deeper than this is refused before parsing; real payloads stay far below it. */
export const MAX_JSON_DEPTH = 128;

/**
 * Replaces Fastify's JSON parser with one that first measures nesting depth in a single
 * linear pass: a body like `[[[[...` 100,000 levels deep would otherwise parse fine and
 * then overflow the stack of whatever walks it (validation, storage, serialisation).
 * Parsing itself still goes through Fastify's parser (prototype poisoning checks).
 * An empty body reads as "no body", so bodiless POSTs with a JSON content type work.
 */
export function installJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string' },
    (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (isBlank(text)) {
        done(null, undefined);
        return;
      }
      if (depthExceeds(text, MAX_JSON_DEPTH)) {
        done(new HttpProblem(400, 'malformed_json', `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`));
        return;
      }
      void parse(request, text, (err, value) => {
        if (err) done(new HttpProblem(400, 'malformed_json', 'the request body is not valid JSON'));
        else done(null, value);
      });
    },
  );
}

/** Empty or only whitespace; trim() is called only when the first character may be a space. */
function isBlank(text: string): boolean {
  if (text.length === 0) return true;
  const first = text.charCodeAt(0);
  return (first <= 0x20 || first >= 0x7f) && text.trim() === '';
}

/** True when brackets outside strings nest deeper than `max`. */
export function depthExceeds(text: string, max: number): boolean {
  // Nesting deeper than max needs more than max opening brackets. Counting them with
  // indexOf (vectorised) settles ordinary bodies without walking them character by character.
  if (!hasMoreThan(text, '{', '[', max)) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) {
      inString = true;
    } else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) {
      depth--;
    }
  }
  return false;
}

/** Whether `text` holds more than `max` occurrences of `a` and `b` together. */
function hasMoreThan(text: string, a: string, b: string, max: number): boolean {
  let count = 0;
  for (const ch of [a, b]) {
    for (let i = text.indexOf(ch); i !== -1; i = text.indexOf(ch, i + 1)) {
      if (++count > max) return true;
    }
  }
  return false;
}
