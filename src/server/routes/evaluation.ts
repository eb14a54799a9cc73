import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { countedAlready, noteCounts, type CountedStep, type Counters } from '../../counting/index.js';
import { evaluateStep, type CompiledControlSet, type EvaluationOutcome } from '../../engine/index.js';
import {
  AgentNameSchema,
  EvaluationRequestSchema,
  EvaluationResultSchema,
  isValidSessionId,
  type ApprovalRecord,
  type EvaluationRequest,
  type EvaluationResult,
} from '../../model/index.js';
import { traceIdsFromHeaders } from '../../observability/trace.js';
import { EVALUATE_SPAN, endEvaluationSpan, endFailedSpan } from '../../tracing/evaluation-span.js';
import { parentOfHeaders } from '../../tracing/trace-context.js';
import { SPAN_KIND } from '../../tracing/types.js';
import { parseOr422, type ServerContext } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { MAX_JSON_DEPTH } from '../json-body.js';
import { serverDenyResult } from '../refusal-result.js';
import { AnswerWriter } from '../result-json.js';
import { evaluateInSession } from '../session-step.js';

const DOC = {
  operationId: 'evaluateStep',
  summary: 'Evaluate a step against the agent’s controls',
  description:
    'A deny or a steer is a result (200), not an error. An agent without controls (or not registered) is allowed. ' +
    `A step nesting deeper than ${MAX_JSON_DEPTH} levels cannot be checked and is denied (200, decision deny, one match with control_id 0 naming the limit).`,
  tag: 'evaluation',
  body: EvaluationRequestSchema,
  responses: { 200: EvaluationResultSchema },
} satisfies OperationDoc;

/**
 * `POST /api/v1/evaluation`: the hot path. The agent's compiled set comes from memory
 * (ControlSetCache), so the steady state reads nothing from the store; a deny is a
 * result (200), not an error.
 */
export const evaluationRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const { controlSets, observability, config, tracing, counters, sessions } = ctx;
  // This app's memo of the hot path: the answers it wrote.
  const answers = new AnswerWriter();
  // Excerpts of matches are made only while something shows them: a live stream subscriber,
  // or spans that carry content. Stored events and metrics do not need them.
  const options = { execution: 'server', collectExecutions: observability !== undefined && config.observabilityEnabled, excerpts: false } as const;
  // For a stream subscriber's summaries, and for a recorded span, which names each matched
  // control's evaluator and duration (and its excerpt, with content).
  const detailedOptions = { execution: 'server', collectExecutions: true, excerpts: true } as const;
  const includeContent = tracing?.config.includeContent ?? false;

  // The request's JSON Schema, generated from the same zod schema, is checked by Fastify's
  // compiled validator: a fraction of zod's cost on the hot path. Only when it fails does
  // zod run, to produce the exact 422 (or accept what only zod's transforms allow).
  const { $schema: _unused, ...requestSchema } = z.toJSONSchema(EvaluationRequestSchema, { io: 'input', unrepresentable: 'any' });
  // No response schema: the answer is written by the AnswerWriter (result-json.ts).
  const schema = { body: requestSchema };

  /** An approval taken by a request that then failed, given back; a failure to is logged (the request's own error is the answer). */
  const giveBack = async (approval: ApprovalRecord, actor: string): Promise<void> => {
    try {
      await ctx.approvals.gate.giveBack(approval, actor);
    } catch (error) {
      app.log.warn({ err: error, approval_id: approval.id }, 'giving back the approval of a failed request failed');
    }
  };

  app.post('/evaluation', { config: { access: 'read', bodyText: 'unchecked', deepJson: 'flag', openapi: DOC }, schema, attachValidation: true }, async (request, reply) => {
    // With tracing off this is the whole cost of it: one test.
    const span = tracing ? tracing.startSpan(EVALUATE_SPAN, SPAN_KIND.server, parentOfHeaders(request.headers)) : null;
    let body: EvaluationRequest;
    let set: CompiledControlSet;
    let outcome: EvaluationOutcome;
    let approved: ApprovalRecord | null = null;
    // What the step's counts did, noted when it may ask: a question keeps them (approval-gate.ts).
    let noted: CountedStep[] | null = null;
    // Ask controls the approval taken does not answer: they count the step over where its question was not.
    let uncovered: ReadonlySet<number> = NO_IDS;
    try {
      body = requestOf(request.body, request.validationError === undefined);
      if (request.bodyTooDeep) {
        span?.end();
        return await reply.type('application/json; charset=utf-8').send(tooDeepResult());
      }
      set = controlSets.peek(body.agent_name) ?? (await controlSets.get(body.agent_name));
      const base = span?.isRecording() || (observability !== undefined && observability.hub.size > 0) ? detailedOptions : options;
      // A step submitted again on its approval was counted when it asked: it takes its
      // approval first and adds only what it counts beyond its question's counts.
      let stepCounters: Counters = counters;
      if (set.counting && set.askingIds !== null) {
        const taken = await ctx.approvals.gate.takeApproved(body, ctx.actorOf(request));
        if (taken === null) {
          const noting = noteCounts(counters);
          stepCounters = noting.counters;
          noted = noting.counted;
        } else {
          approved = taken.approval;
          const counting = countedAlready(counters, taken.counted, set.askingIds);
          stepCounters = counting.counters;
          noted = counting.counted;
          uncovered = counting.uncovered;
        }
      }
      // Only sets with rate or budget controls need the agent and the counters. Written
      // out field by field: a spread ({ ...base, agentName }) made V8 give each request's
      // options a new hidden class, so every read of them in the engine missed its cache.
      const stepOptions = set.counting
        ? { execution: base.execution, collectExecutions: base.collectExecutions, excerpts: base.excerpts, agentName: body.agent_name, counters: stepCounters }
        : base;
      // Session-aware controls and a session: its labels are read before the step, and
      // what the step adds is stored before the answer (session-step.ts).
      const pending =
        set.sessions && body.session_id !== undefined
          ? evaluateInSession(set, body, body.session_id, stepOptions, sessions)
          : evaluateStep(set, body.step, body.stage, stepOptions);
      outcome = pending instanceof Promise ? await pending : pending;
    } catch (error) {
      if (span) endFailedSpan(span, error);
      if (approved !== null) await giveBack(approved, ctx.actorOf(request));
      throw error;
    }
    if (approved !== null) ctx.approvals.gate.announceUsed(approved);
    if (span) {
      const { agent_name: agent, stage, step } = body;
      endEvaluationSpan(span, { agent, stage, step, result: outcome.result, executions: outcome.executions, setRevision: set.revision, includeContent });
    }
    // An ask is bound to this exact step's approval: ask while pending, allow once approved, deny when denied or expired.
    // A counting control asking about what the question was not (a larger amount, another key) is a new question.
    const result =
      outcome.result.decision !== 'ask'
        ? outcome.result
        : approved !== null && !asksUncovered(outcome.result, uncovered)
          ? ctx.approvals.gate.approvedAnswer(outcome.result, approved)
          : await ctx.approvals.gate.settle(outcome.result, body, set, ctx.actorOf(request), noted ?? []);
    if (observability) {
      // Recording must never fail or slow the answer; it is synchronous and buffered.
      try {
        observability.recordEvaluation({
          agent_name: body.agent_name,
          stage: body.stage,
          step: body.step,
          // As answered: a step whose approval was decided is recorded (and streamed) as allowed or denied, not as asked.
          outcome: result === outcome.result ? outcome : { result, executions: outcome.executions },
          set_revision: set.revision,
          session_id: body.session_id,
          trace: () => traceIdsFromHeaders(request.headers),
          unguarded: isUnguarded(set),
        });
      } catch (error) {
        app.log.warn({ err: error }, 'recording an evaluation failed');
      }
    }
    // Queues a reference only; redaction and the write happen on the recorder's timer.
    ctx.recorder?.record({ agent_name: body.agent_name, stage: body.stage, step: body.step, decision: result.decision, session_id: body.session_id });
    return reply.type('application/json; charset=utf-8').send(answers.answer(result));
  });
};

/**
 * The answer for a step nesting past MAX_JSON_DEPTH. Walking it (selectors, evaluators,
 * serialisation) could overflow the stack, and leaving the deep part out would hide what
 * is in it from every control, so the step is denied: an uncheckable step must never be
 * an error a fail-open client lets through. The one match names no stored control (id 0).
 */
export function tooDeepResult(): EvaluationResult {
  const message = `the step nests deeper than ${MAX_JSON_DEPTH} levels, so it cannot be checked; it is denied`;
  return serverDenyResult('step-depth-limit', message, { max_depth: MAX_JSON_DEPTH });
}

const NO_IDS: ReadonlySet<number> = new Set();

/** Whether an ask match of the result is one of the `uncovered` controls. */
function asksUncovered(result: EvaluationResult, uncovered: ReadonlySet<number>): boolean {
  return uncovered.size > 0 && result.matches.some((m) => m.action === 'ask' && uncovered.has(m.control_id));
}

/** No control that could change a decision: none enabled, none failed to compile, only shadow ones. */
function isUnguarded(set: CompiledControlSet): boolean {
  return set.skipped.length === 0 && set.controls.length === (set.shadowIds?.size ?? 0);
}

/**
 * The validated request. When Fastify's compiled validator passed, only the agent name's
 * transform is left to do, by the schema's own parse of that field; zod parses the whole
 * request otherwise, to produce the exact 422.
 */
function requestOf(raw: unknown, passedSchema: boolean): EvaluationRequest {
  if (passedSchema) {
    let fast = raw as EvaluationRequest;
    const agentName = AgentNameSchema.safeParse(fast.agent_name);
    // The compiled schema cannot say "well-formed Unicode": zod words that 422.
    if (agentName.success && (fast.session_id === undefined || isValidSessionId(fast.session_id))) {
      // The compiled validator does not fill in defaults: a step sent without input is a step with input null, as zod would make it.
      if (fast.step.input === undefined) fast = { ...fast, step: { ...fast.step, input: null } };
      return agentName.data === fast.agent_name ? fast : { ...fast, agent_name: agentName.data };
    }
  }
  return parseOr422(EvaluationRequestSchema, raw, 'evaluation request');
}
