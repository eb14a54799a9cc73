/** An agent guarded by one ask control (payments over 10,000), on any app. */
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import { call, json } from '../server/helpers.js';

export const ADMIN = 'admin-key-0123456789abcdef';
export const REGULAR = 'regular-key-0123456789abcdef';
export const APPROVER = 'approver-key-0123456789abcdef';
export const KEYS = { GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: ADMIN, GUARD_API_KEYS: REGULAR, GUARD_APPROVER_API_KEYS: APPROVER };

export const askLargePayments = {
  scope: { step_types: ['tool'], step_names: ['pay'], stages: ['pre'] },
  selector: { path: 'input.amount' },
  // Five digits or more: 10,000 and up.
  evaluator: { name: 'regex', config: { pattern: '^[1-9][0-9]{4,}$' } },
  action: { decision: 'ask', approval: { timeout: '15m' } },
};

export async function seedPayments(app: FastifyInstance, headers: Record<string, string> = {}): Promise<number> {
  const created = await call(app, 'PUT', '/api/v1/controls', { name: 'large-payments', data: askLargePayments }, headers);
  if (created.statusCode !== 201) throw new Error(`seed: ${created.statusCode} ${created.body}`);
  const id = json(created).control_id as number;
  await call(app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'payer' }, headers);
  const link = await call(app, 'POST', `/api/v1/agents/payer/controls/${id}`, undefined, headers);
  if (link.statusCode !== 200) throw new Error(`link: ${link.statusCode} ${link.body}`);
  return id;
}

export function payment(amount: number, extra: Record<string, unknown> = {}) {
  return { agent_name: 'payer', stage: 'pre', step: { type: 'tool', name: 'pay', input: { amount, ...extra } } };
}

export async function evaluate(app: FastifyInstance, body: unknown, headers: Record<string, string> = {}) {
  const response = await call(app, 'POST', '/api/v1/evaluation', body, headers);
  if (response.statusCode !== 200) throw new Error(`evaluate: ${response.statusCode} ${response.body}`);
  return json(response);
}

/** The scope of controls on the payment step, before it runs. */
export const payScope = { step_types: ['tool'], step_names: ['pay'], stages: ['pre'] };

/** Creates a control and links it to the payer (an admin key). */
export async function linkToPayer(app: FastifyInstance, name: string, data: unknown): Promise<void> {
  const created = await call(app, 'PUT', '/api/v1/controls', { name, data }, { 'x-api-key': ADMIN });
  expect(created.statusCode, created.body).toBe(201);
  const linked = await call(app, 'POST', `/api/v1/agents/payer/controls/${json(created).control_id}`, undefined, { 'x-api-key': ADMIN });
  expect(linked.statusCode, linked.body).toBe(200);
}

/** Approves an approval (an approver key). */
export async function approve(app: FastifyInstance, id: string): Promise<void> {
  expect((await call(app, 'POST', `/api/v1/approvals/${id}/approve`, undefined, { 'x-api-key': APPROVER })).statusCode).toBe(200);
}

/** A payment in a session. */
export function paymentInSession(amount: number, session_id = 'run-1') {
  return { ...payment(amount), session_id };
}
