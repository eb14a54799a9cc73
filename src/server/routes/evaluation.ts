import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { evaluateStep, type EvaluationOutcome } from '../../engine/index.js';
import {
  EvaluationRequestSchema,
  EvaluationResultSchema,
  isValidAgentName,
  normaliseAgentName,
  type EvaluationRequest,
} from '../../model/index.js';
import { traceIdsFromHeaders } from '../../observability/trace.js';
import { parseOr422, type ServerContext } from '../context.js';

/**
 * `POST /api/v1/evaluation`: the hot path. The agent's compiled set comes from memory
 * (ControlSetCache), so the steady state reads nothing from the store; a deny is a
 * result (200), not an error.
 */
export const evaluationRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const { controlSets, observability, config } = ctx;
  const options = { execution: 'server', collectExecutions: observability !== undefined && config.observabilityEnabled } as const;

  // A response schema lets Fastify serialise results with a compiled serializer (faster
  // than JSON.stringify on the hot path); it is generated from the model's strict schema.
  const { $schema: _ignored, ...resultSchema } = z.toJSONSchema(EvaluationResultSchema, { io: 'output', unrepresentable: 'any' });
  // The request's JSON Schema, generated from the same zod schema, is checked by Fastify's
  // compiled validator: a fraction of zod's cost on the hot path. Only when it fails does
  // zod run, to produce the exact 422 (or accept what only zod's transforms allow).
  const { $schema: _unused, ...requestSchema } = z.toJSONSchema(EvaluationRequestSchema, { io: 'input', unrepresentable: 'any' });
  const schema = { body: requestSchema, response: { 200: resultSchema } };

  app.post('/evaluation', { config: { access: 'read' }, schema, attachValidation: true }, async (request, reply) => {
    const body = requestOf(request.body, request.validationError === undefined);
    const set = controlSets.peek(body.agent_name) ?? (await controlSets.get(body.agent_name));
    const pending = evaluateStep(set, body.step, body.stage, options);
    const outcome: EvaluationOutcome = pending instanceof Promise ? await pending : pending;
    if (observability) {
      // Recording must never fail or slow the answer; it is synchronous and buffered.
      try {
        const ids = traceIdsFromHeaders(request.headers);
        observability.recordEvaluation({
          agent_name: body.agent_name,
          stage: body.stage,
          step: body.step,
          outcome,
          trace_id: ids.trace_id,
          span_id: ids.span_id,
        });
      } catch (error) {
        request.log.warn({ err: error }, 'recording an evaluation failed');
      }
    }
    // Queues a reference only; redaction and the write happen on the recorder's timer.
    ctx.recorder?.record({ agent_name: body.agent_name, stage: body.stage, step: body.step, decision: outcome.result.decision });
    return reply.send(outcome.result);
  });
};

/** The validated request: the fast path when the compiled schema passed, zod otherwise. */
function requestOf(raw: unknown, passedSchema: boolean): EvaluationRequest {
  if (passedSchema) {
    const fast = raw as EvaluationRequest;
    const agentName = normaliseAgentName(fast.agent_name);
    if (isValidAgentName(agentName)) return agentName === fast.agent_name ? fast : { ...fast, agent_name: agentName };
  }
  return parseOr422(EvaluationRequestSchema, raw, 'evaluation request');
}
