import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { FieldIssue } from '../model/index.js';
import type { StoreError } from '../store/types.js';

/** Machine-readable reasons carried in every problem body (`error_code`). */
export const ERROR_CODES = [
  'validation_failed',
  'bad_request',
  'invalid_utf8',
  'not_found',
  'conflict',
  'unauthorized',
  'forbidden',
  'host_not_allowed',
  'cross_site',
  'payload_too_large',
  'malformed_json',
  'unsupported_media_type',
  'uri_too_long',
  'request_timeout',
  'headers_too_large',
  'too_many_requests',
  'read_only',
  'stale_revision',
  'internal',
  'unavailable',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The problem+json body (RFC 9457) every error answer carries; the OpenAPI document shows it. */
export const ProblemSchema = z.strictObject({
  type: z.string().describe('A URI naming the kind of problem: https://guardctl.dev/problems/<error-code>'),
  title: z.string(),
  status: z.number().int(),
  detail: z.string().describe('What went wrong and what to do about it'),
  error_code: z.enum(ERROR_CODES),
  /** Every invalid field (422), or the change that failed (`POST /changes`). */
  errors: z.array(z.strictObject({ field: z.string(), code: z.string(), message: z.string() })).optional(),
  change_index: z.number().int().nonnegative().optional().describe('POST /changes: the 0-based index of the change that made the batch fail'),
});

export type Problem = Omit<z.infer<typeof ProblemSchema>, 'errors'> & { errors?: FieldIssue[] };

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * An error a route throws to answer with a problem body; the app's one error handler
 * turns it into `application/problem+json`.
 */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: ErrorCode,
    readonly detail: string,
    readonly errors?: FieldIssue[],
    /** Members the problem body carries besides the standard ones. */
    readonly extensions?: Pick<Problem, 'change_index'>,
  ) {
    super(detail);
    this.name = 'HttpProblem';
  }
}

export function problemOf(status: number, errorCode: ErrorCode, detail: string, errors?: FieldIssue[]): Problem {
  const problem: Problem = {
    type: `https://guardctl.dev/problems/${errorCode.replaceAll('_', '-')}`,
    title: TITLES[status] ?? 'Error',
    status,
    detail,
    error_code: errorCode,
  };
  if (errors) problem.errors = errors;
  return problem;
}

export function sendProblem(reply: FastifyReply, problem: Problem): FastifyReply {
  return reply.code(problem.status).type('application/problem+json').send(problem);
}

export const notFound = (detail: string): HttpProblem => new HttpProblem(404, 'not_found', detail);

export const invalid = (detail: string, errors: FieldIssue[]): HttpProblem =>
  new HttpProblem(422, 'validation_failed', detail, errors);

/** Stores speak in kinds; the API speaks in statuses. */
export function problemOfStoreError(error: StoreError): Problem {
  switch (error.kind) {
    case 'conflict':
      return problemOf(409, 'conflict', error.message, error.issues);
    case 'not_found':
      return problemOf(404, 'not_found', error.message, error.issues);
    case 'stale':
      return problemOf(409, 'stale_revision', error.message);
    case 'unavailable':
      // The store's message may name hosts or SQL; clients only learn that it is down.
      return problemOf(503, 'unavailable', 'the database is unavailable; try again shortly');
  }
}

/** Answers at once with a problem body, for routes that reply instead of throwing. */
export function sendError(reply: FastifyReply, status: number, code: ErrorCode, detail: string): FastifyReply {
  return sendProblem(reply, problemOf(status, code, detail));
}

/** A 422 whose detail names the first invalid field of `what`. */
export function sendValidationProblem(reply: FastifyReply, what: string, errors: FieldIssue[]): FastifyReply {
  const first = errors[0];
  const detail = first ? `the ${what} is not valid: ${first.field || '(root)'}: ${first.message}` : `the ${what} is not valid`;
  return sendProblem(reply, problemOf(422, 'validation_failed', detail, errors));
}
