/**
 * The client's transport: one request at a time to the guardctl server, bounded by a
 * timeout from connecting to the last body byte, its answer checked against a schema.
 * Failures become the client's typed errors: ConnectionError (no answer), ApiError (an
 * error status and its problem body), ResponseShapeError (an answer of the wrong shape).
 */
import type { z } from 'zod';
import { ApiError, type ProblemBody } from '../errors.js';
import { fieldIssuesOf } from '../model/index.js';
import { ConnectionError, ResponseShapeError } from './errors.js';

export const DEFAULT_TIMEOUT_MS = 30_000;

export interface GuardClientOptions {
  /** Base address, for example `http://127.0.0.1:8000` (a trailing slash is fine). */
  serverUrl: string;
  /** Sent as `X-API-Key` when set. */
  apiKey?: string | undefined;
  /** Bound on each request, connection to last body byte. Default 30000 (SPEC section 8). */
  timeoutMs?: number | undefined;
  /** A fetch implementation; defaults to the global one. */
  fetch?: typeof fetch | undefined;
  /** Extra headers on every request (for example `traceparent`). */
  headers?: Record<string, string> | undefined;
}

/** Query parameters; a list repeats its parameter (`label=a&label=b`). */
export type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

export interface RequestSpec<S extends z.ZodType> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path below the base URL, already encoded, for example `/api/v1/controls/3`. */
  path: string;
  /** Method and path as documented (`GET /controls/{control_id}`), for error messages. */
  endpoint: string;
  query?: Query;
  body?: unknown;
  /** The body as JSON text already (sent as it is, instead of `body` serialised here). */
  bodyJson?: string;
  schema: S;
  headers?: Record<string, string>;
  /** This request's time limit instead of the client's (a long-poll is meant to take long). */
  timeoutMs?: number;
}

export class Transport {
  readonly serverUrl: string;
  readonly timeoutMs: number;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string>;

  constructor(options: GuardClientOptions) {
    let base: URL;
    try {
      base = new URL(options.serverUrl);
    } catch {
      throw new ConnectionError('GET', options.serverUrl, 'EINVALIDURL', 'not a valid URL');
    }
    this.serverUrl = base.href.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#apiKey = options.apiKey || undefined;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#headers = { ...options.headers };
  }

  url(path: string, query?: Query): string {
    let url = this.serverUrl + path;
    if (query) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(query)) {
        if (Array.isArray(value)) for (const item of value as readonly string[]) params.append(key, item);
        else if (value !== undefined) params.set(key, String(value));
      }
      const text = params.toString();
      if (text) url += `?${text}`;
    }
    return url;
  }

  async request<S extends z.ZodType>(spec: RequestSpec<S>): Promise<z.infer<S>> {
    const url = this.url(spec.path, spec.query);
    const headers: Record<string, string> = { accept: 'application/json', ...this.#headers, ...spec.headers };
    // Every write says JSON, body or not: the server refuses writes that do not (415).
    if (spec.body !== undefined || spec.bodyJson !== undefined || spec.method !== 'GET') headers['content-type'] = 'application/json';
    if (this.#apiKey) headers['x-api-key'] = this.#apiKey;
    // One signal bounds the whole exchange: connecting, headers and reading the body.
    const limitMs = spec.timeoutMs ?? this.timeoutMs;
    const signal = AbortSignal.timeout(limitMs);

    let response: Response;
    try {
      response = await this.#fetch(url, {
        method: spec.method,
        headers,
        body: spec.bodyJson ?? (spec.body === undefined ? undefined : JSON.stringify(spec.body)),
        signal,
      });
    } catch (error) {
      throw this.#connectionError(spec.method, url, error, limitMs);
    }

    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      if (isTimeout(error)) throw this.#connectionError(spec.method, url, error, limitMs);
      throw new ResponseShapeError(
        spec.endpoint, url, `the body was cut off (${describeCause(error).reason})`,
      );
    }

    if (!response.ok) throw new ApiError(response.status, parseProblem(text), spec.method, url);

    const endpoint = spec.endpoint;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      const type = response.headers.get('content-type') ?? 'no content-type';
      throw new ResponseShapeError(endpoint, url, `the body is not JSON (${type}, ${text.length} bytes: ${preview(text)})`);
    }
    const parsed = spec.schema.safeParse(json);
    if (!parsed.success) {
      const issues = fieldIssuesOf(parsed.error).slice(0, 3);
      const what = issues.map((i) => `${i.field || '(body)'}: ${i.message}`).join('; ');
      throw new ResponseShapeError(endpoint, url, `the JSON has the wrong shape (${what})`);
    }
    return parsed.data;
  }

  #connectionError(method: string, url: string, error: unknown, limitMs: number): ConnectionError {
    if (isTimeout(error)) {
      return new ConnectionError(method, url, 'TIMEOUT', `no answer within ${limitMs} ms`, { cause: error });
    }
    const { code, reason } = describeCause(error);
    return new ConnectionError(method, url, code, reason, { cause: error });
  }
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
}

/** undici wraps the system error: `TypeError('fetch failed', {cause: {code: 'ECONNREFUSED'}})`. */
function describeCause(error: unknown): { code: string; reason: string } {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    const c = current as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof c.code === 'string' && c.code) {
      const message = typeof c.message === 'string' ? c.message : c.code;
      return { code: c.code, reason: message.includes(c.code) ? message : `${c.code} ${message}` };
    }
    current = c.cause;
  }
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'ENETWORK', reason: message };
}

/** An error answer's problem+json body; null when it is not a JSON object. */
export function parseProblem(text: string): ProblemBody | null {
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value;
  } catch {
    // Not JSON (a proxy's HTML error page, for instance): the status alone is reported.
  }
  return null;
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat === '') return 'empty';
  return JSON.stringify(flat.length > 60 ? `${flat.slice(0, 60)}...` : flat);
}
