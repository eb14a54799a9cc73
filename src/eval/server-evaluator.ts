/**
 * Evaluates cases through a running server (`guardctl eval --server`): each case one
 * POST /evaluation for its agent, timed as a round trip. The server masks what it
 * returns; a miss's text is masked here before it is listed.
 */
import { randomUUID } from 'node:crypto';
import type { GuardClient } from '../client/index.js';
import { UserError } from '../errors.js';
import { sensitiveExcerpt } from '../evaluators/sensitive.js';
import { textOf } from '../evaluators/text.js';
import { normaliseAgentName } from '../model/index.js';
import type { KnownNames } from './dataset.js';
import type { CaseEvaluator, CaseResult } from './run.js';
import type { StepCase } from './types.js';

const EXCERPT_MAX = 80;

/**
 * An evaluator for the server `client` talks to. The control names a dataset may use are
 * those linked to the agents the server knows, read once here.
 */
export async function serverEvaluator(client: GuardClient, via: string, defaultAgent: string | undefined): Promise<CaseEvaluator> {
  const agents = new Map<string, ReadonlySet<string>>();
  for (const agent of await client.listAgents()) {
    const linked = await client.getAgentControls(agent.agent_name);
    agents.set(normaliseAgentName(agent.agent_name), new Set(linked.controls.map((c) => c.name)));
  }
  const known: KnownNames = { controls: new Set(), agents, defaultAgent };
  const evaluate = async (c: StepCase, sessionId?: string): Promise<CaseResult> => {
    // dataset.ts checked the agent against `agents`; a case without one has no controls on a server.
    if (c.agent === undefined) throw new UserError('the case names no agent', 'add "agent" to the line or pass --agent');
    const request = { agent_name: normaliseAgentName(c.agent), stage: c.stage, step: c.step };
    const started = performance.now();
    const result = await client.evaluate(sessionId === undefined ? request : { ...request, session_id: sessionId });
    const elapsedMs = performance.now() - started;
    return { result, timings: null, elapsedMs, excerpts: null, maskedText: () => sensitiveExcerpt(textOf(c.step.input) ?? '', { max: EXCERPT_MAX }) };
  };
  return {
    via,
    known,
    evaluate: (c) => evaluate(c),
    session() {
      // A random id per case: the server keeps sessions (for GUARD_SESSION_TTL), and a run
      // before this one, or another run at the same time, must not lend it labels.
      const id = `eval-${randomUUID()}`;
      return { evaluate: (c) => evaluate(c, id) };
    },
  };
}
