import type { FastifyReply } from 'fastify';
import type { FieldIssue } from '../model/index.js';
import { problemOf, sendProblem, type ErrorCode } from '../server/problem.js';

/** Answers with the server's problem+json shape (src/server/problem.ts). */
export function sendError(reply: FastifyReply, status: number, code: ErrorCode, detail: string): FastifyReply {
  return sendProblem(reply, problemOf(status, code, detail));
}

export function sendValidationProblem(reply: FastifyReply, what: string, errors: FieldIssue[]): FastifyReply {
  const first = errors[0];
  const detail = first ? `the ${what} is not valid: ${first.field || '(root)'}: ${first.message}` : `the ${what} is not valid`;
  return sendProblem(reply, problemOf(422, 'validation_failed', detail, errors));
}
