/**
 * The MCP gateway on a step an ask control holds (docs/approvals.md). When the client
 * declared the `elicitation` capability (form mode) at initialize, the gateway asks the
 * person in the client with `elicitation/create`: the tool, the control, the approval id
 * and the step as the server recorded it (masked). A person's yes or no is recorded
 * through the guard server's API with the gateway's approver key (`approverApiKey`, else
 * its own key), and only if that key may decide (admin or GUARD_APPROVER_API_KEYS): the
 * client's answer alone decides nothing. Otherwise (no elicitation, a key that may not
 * decide, the person declined or cancelled) the gateway waits for a decision made through
 * guardctl (long-poll) up to the request timeout. Then the step is submitted again: the
 * server allows it once if approved, denies it with the reason if denied or expired, and
 * asks again (the model reads that it waits for a person) if still pending.
 */
import { randomUUID } from 'node:crypto';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isJSONRPCErrorResponse, isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { GuardClient } from '../client/index.js';
import { ApiError } from '../errors.js';
import { MAX_APPROVAL_REASON, REASON_CONTROL_CHARACTERS, type Stage } from '../model/index.js';
import type { GuardAgent, StepInput } from '../sdk/agent.js';
import { awaitDecision } from '../sdk/approval-wait.js';
import { ApprovalError } from '../sdk/errors.js';
import type { Verdict } from '../sdk/verdict.js';
import { report, sessionOf, type AdapterOptions } from './decisions.js';
import { stepText } from './mcp-steps.js';
import { messageOf } from './mcp-text.js';

export type { AdapterOptions } from './decisions.js';

export interface GatewayApprovalOptions extends AdapterOptions {
  guard: GuardAgent;
  /** The client's side: where elicitation/create goes. */
  client: Transport;
  /** How long a person (elicitation) or a decision (long-poll) is waited for; 0: until the approval expires. */
  requestTimeoutMs: number;
  report(line: string): void;
  /** The key the gateway decides approvals with (admin or GUARD_APPROVER_API_KEYS); default: the guard's own key. */
  approverApiKey?: string | undefined;
}

/** What the person is asked for: approve or not, and why. */
const REQUESTED_SCHEMA = {
  type: 'object',
  properties: {
    approve: { type: 'boolean', title: 'Approve', description: 'Run this exact call once' },
    reason: { type: 'string', title: 'Reason', description: 'Recorded with the decision', maxLength: MAX_APPROVAL_REASON },
  },
  required: ['approve'],
} as const;

/** Longest step text shown in the question; the rest is in `guardctl approvals show`. */
const MAX_SHOWN_STEP = 2000;

type Answer = { approve: boolean; reason?: string };

export class McpApprovals {
  #elicitation = false;
  readonly #waiting = new Map<string, (message: JSONRPCMessage | null) => void>();

  /** Passes a client request on, noting whether its initialize declares form elicitation. */
  seen<M extends JSONRPCMessage>(message: M): M {
    // The method first: the SDK's guard validates the whole message with zod, and only an initialize matters here.
    if ('method' in message && message.method === 'initialize' && isJSONRPCRequest(message)) {
      const capability = (message.params?.capabilities as { elicitation?: unknown } | undefined)?.elicitation;
      this.#elicitation = typeof capability === 'object' && capability !== null && supportsForm(capability as Record<string, unknown>);
    }
    return message;
  }

  /** An answer of the client to one of the gateway's elicitations: taken here (true), never relayed to the server. */
  answered(message: JSONRPCMessage): boolean {
    if (!isJSONRPCResultResponse(message) && !isJSONRPCErrorResponse(message)) return false;
    const settle = typeof message.id === 'string' ? this.#waiting.get(message.id) : undefined;
    if (!settle) return false;
    settle(message);
    return true;
  }

  /** A check of the relay: an ask is put to a person, then the step submitted again. */
  async decide(o: GatewayApprovalOptions, step: StepInput, stage: Stage, derived: string | undefined): Promise<Verdict> {
    const sessionId = sessionOf(o.guard, o, derived);
    const checkOptions = sessionId === undefined ? {} : { sessionId };
    let verdict = await o.guard.verdict(step, stage, checkOptions);
    const pending = verdict.error;
    if (verdict.decision === 'ask' && pending instanceof ApprovalError && pending.status === 'pending') {
      report(o, step, stage, verdict, sessionId);
      await this.#resolve(o, step, pending);
      verdict = await o.guard.verdict(step, stage, checkOptions);
    }
    // A denial or an expiry: the model reads what became of the approval (the approver's reason), not only "blocked".
    if (verdict.error instanceof ApprovalError) verdict = { ...verdict, message: verdict.error.message };
    report(o, step, stage, verdict, sessionId);
    return verdict;
  }

  /** Settles once the approval is decided through the person's answer or guardctl, or the time is up. */
  async #resolve(o: GatewayApprovalOptions, step: StepInput, pending: ApprovalError): Promise<void> {
    const until = o.requestTimeoutMs > 0 ? Date.now() + o.requestTimeoutMs : Date.parse(pending.expiresAt) + 1000;
    if (this.#elicitation) {
      const answer = await this.#ask(o, step, pending, until);
      if (answer !== null && (await this.#record(o, pending.approvalId, answer))) return;
    }
    if (o.guard.approvalMode === 'throw') return;
    await awaitDecision(o.guard.client, pending, Math.max(0, until - Date.now()));
  }

  /** The person's answer, or null (declined, cancelled, malformed, not answered in time). */
  async #ask(o: GatewayApprovalOptions, step: StepInput, pending: ApprovalError, until: number): Promise<Answer | null> {
    // Unguessable: the MCP server's own requests to the client pass through with the ids it chose,
    // and the client's answer to one of them must never be taken for the person's answer here.
    const id = `guardctl-approval-${randomUUID()}`;
    const message = await this.#question(o, step, pending);
    const answer = new Promise<JSONRPCMessage | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), Math.max(0, until - Date.now()));
      timer.unref();
      this.#waiting.set(id, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
    try {
      await o.client.send({ jsonrpc: '2.0', id, method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: REQUESTED_SCHEMA } });
    } catch (error) {
      o.report(`could not ask the client about approval ${pending.approvalId}: ${messageOf(error)}`);
      this.#waiting.delete(id);
      return null;
    }
    const reply = await answer;
    this.#waiting.delete(id);
    if (reply === null) {
      void o.client.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'no answer in time' } }).catch(() => undefined);
      return null;
    }
    return answerOf(reply);
  }

  /** The question: what runs, which control asks, the approval id, and the step as the server recorded it (masked). */
  async #question(o: GatewayApprovalOptions, step: StepInput, pending: ApprovalError): Promise<string> {
    let shown: string;
    let control = '';
    try {
      const record = await o.guard.client.approvals.get(pending.approvalId);
      shown = JSON.stringify(record.step);
      control = ` Control "${record.control_name}" asks a person to approve it.`;
    } catch {
      // Never the step as the agent sent it: that is unmasked.
      shown = `(see guardctl approvals show ${pending.approvalId})`;
    }
    if (shown.length > MAX_SHOWN_STEP) shown = `${shown.slice(0, MAX_SHOWN_STEP)}… (see guardctl approvals show ${pending.approvalId})`;
    return `Approve ${stepText(step)}?${control} Approval ${pending.approvalId}, pending until ${pending.expiresAt}. Step: ${shown}`;
  }

  /** Records the person's answer with the gateway's key; false when that key may not decide (the decision is then waited for). */
  async #record(o: GatewayApprovalOptions, approvalId: string, answer: Answer): Promise<boolean> {
    const client = o.approverApiKey === undefined ? o.guard.client : new GuardClient({ serverUrl: o.guard.client.serverUrl, apiKey: o.approverApiKey, timeoutMs: o.guard.client.timeoutMs });
    try {
      if (answer.approve) await client.approvals.approve(approvalId, answer.reason);
      else await client.approvals.deny(approvalId, answer.reason);
      return true;
    } catch (error) {
      // Decided meanwhile (through guardctl): the step submitted again reads that decision.
      if (error instanceof ApiError && error.status === 409) return true;
      const why = error instanceof ApiError && error.status === 403 ? "the gateway's key may not decide approvals (an admin key or one of GUARD_APPROVER_API_KEYS may)" : messageOf(error);
      o.report(`the person ${answer.approve ? 'approved' : 'denied'} approval ${approvalId} in the client, but it was not recorded: ${why}; waiting for a decision through guardctl`);
      return false;
    }
  }
}

/** Form mode: an empty capability object (before modes existed) or one naming `form`. */
function supportsForm(capability: Record<string, unknown>): boolean {
  return Object.keys(capability).length === 0 || 'form' in capability;
}

/** The person's answer from an elicitation result: accepted with a boolean `approve`, else null. */
function answerOf(reply: JSONRPCMessage): Answer | null {
  if (!isJSONRPCResultResponse(reply)) return null;
  const result = reply.result as { action?: unknown; content?: { approve?: unknown; reason?: unknown } };
  if (result.action !== 'accept' || typeof result.content?.approve !== 'boolean') return null;
  const reason = result.content.reason;
  // The server refuses control characters in a reason; the person's answer is kept, with them as spaces.
  const text = typeof reason === 'string' ? reason.replace(new RegExp(REASON_CONTROL_CHARACTERS, 'g'), ' ').slice(0, MAX_APPROVAL_REASON) : '';
  return { approve: result.content.approve, ...(text !== '' && { reason: text }) };
}
