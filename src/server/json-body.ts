import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpProblem, problemOf, sendProblem } from './problem.js';

/** JSON nested deeper than this is refused before parsing; real payloads stay far below it. */
export const MAX_JSON_DEPTH = 128;

/**
 * Fatal: a byte sequence that is not UTF-8 throws instead of becoming U+FFFD, so a body
 * is stored and evaluated exactly as the client sent it or not at all.
 */
const utf8 = new TextDecoder('utf-8', { fatal: true });

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `flag`: a body nested past MAX_JSON_DEPTH is parsed anyway and the request says so
     * (`request.bodyTooDeep`), so the route can answer for it (the evaluation route denies
     * the step) instead of the 400 every other route gives.
     */
    deepJson?: 'refuse' | 'flag';
  }
  interface FastifyRequest {
    /** Set by the JSON parser on routes with `deepJson: 'flag'`: the body nests past MAX_JSON_DEPTH. */
    bodyTooDeep: boolean;
  }
}

/**
 * Replaces Fastify's JSON parser with one that decodes UTF-8 strictly, then measures
 * nesting depth in a single linear pass: a body like `[[[[...` 100,000 levels deep would
 * otherwise parse fine and then overflow the stack of whatever walks it (validation,
 * storage, serialisation). An empty body reads as "no body", so bodiless POSTs with a JSON
 * content type work. Fastify's text/plain parser is removed: no route reads text.
 *
 * Keys named `__proto__`, `constructor` or `prototype` are data. JSON.parse makes each an
 * own property of a plain object and never touches a prototype, so a selector can select
 * them and an evaluator sees them; refusing them (Fastify's default) made any step holding
 * one uncheckable, a 400 that a fail-open client treats as "allow". Code that copies parsed
 * values (the recorder's redaction) builds null-prototype objects for the same reason.
 */
export function installJsonParser(app: FastifyInstance): void {
  app.decorateRequest('bodyTooDeep', false);
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer' },
    (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      let text: string;
      try {
        text = typeof body === 'string' ? body : utf8.decode(body);
      } catch {
        done(new HttpProblem(400, 'invalid_utf8', 'the request body is not valid UTF-8'));
        return;
      }
      if (isBlank(text)) {
        done(null, undefined);
        return;
      }
      if (depthExceeds(text, MAX_JSON_DEPTH)) {
        if (request.routeOptions.config?.deepJson !== 'flag') {
          done(new HttpProblem(400, 'malformed_json', `the JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`));
          return;
        }
        // V8's JSON.parse does not recurse, so any nesting a body within the size limit holds parses.
        request.bodyTooDeep = true;
      }
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        done(new HttpProblem(400, 'malformed_json', 'the request body is not valid JSON'));
        return;
      }
      done(null, value);
    },
  );
}

/** Methods that may carry a body: what they carry must be JSON (see requireJsonWrites). */
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Whether a Content-Type header names JSON in UTF-8: `application/json`, any case, with at most a UTF-8 charset. */
export function isJsonContentType(header: string): boolean {
  if (header === 'application/json') return true;
  const [type = '', ...params] = header.split(';');
  if (type.trim().toLowerCase() !== 'application/json') return false;
  return params.every((param) => {
    const [name = '', value = ''] = param.split('=');
    return name.trim().toLowerCase() !== 'charset' || /^"?utf-?8"?$/i.test(value.trim());
  });
}

/** Whether the request carries body bytes: chunked, or a Content-Length other than 0. */
export function hasBody(headers: FastifyRequest['headers']): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length.trim() !== '0');
}

/**
 * The onRequest hook refusing write bodies that are not JSON. A write without a body needs
 * no content type: SPEC shows the link POST and the DELETEs with payload "none", and its
 * clients (`curl -X POST`, `httpx.post(url)`, generated clients) send none. A body, or a
 * content type, must say application/json in UTF-8: a form or text/plain is refused before
 * any route reads it. This is not the cross-site defence (a browser can send a body-less
 * POST unasked): that is the Host, Origin and Sec-Fetch-Site check (cross-site.ts).
 */
export function requireJsonWrites(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  if (!WRITE_METHODS.has(request.method)) return done();
  const header = request.headers['content-type'];
  if (header === undefined ? !hasBody(request.headers) : isJsonContentType(header)) return done();
  void sendProblem(
    reply,
    problemOf(
      415,
      'unsupported_media_type',
      header === undefined
        ? `send the ${request.method} body with content-type: application/json (a write without a body needs none)`
        : `send the body as application/json in UTF-8, not ${header.split(';')[0]?.trim() ?? header}`,
    ),
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
  // A batch of many small objects (an events batch) has thousands of brackets but is
  // mostly string: strings are skipped with indexOf, so only the text between them is walked.
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      i = closingQuote(text, i);
      // An unterminated string: JSON.parse refuses the body.
      if (i === -1) return false;
    } else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) {
      depth--;
    }
  }
  return false;
}

/** Where the string opening at `open` ends (its closing quote), or -1. */
function closingQuote(text: string, open: number): number {
  for (let at = text.indexOf('"', open + 1); at !== -1; at = text.indexOf('"', at + 1)) {
    // Escaped when an odd number of backslashes stand right before it.
    let backslashes = 0;
    while (text.charCodeAt(at - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return -1;
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
