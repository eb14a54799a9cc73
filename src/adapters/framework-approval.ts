/**
 * An ask (docs/approvals.md) through a framework's own human-in-the-loop: the AI SDK's
 * tool approval (`needsApproval`, tool-approval-request parts) and the OpenAI Agents SDK's
 * interruptions. The framework's prompt is only a way to show the question: the step runs
 * when guardctl's approval of that exact step is approved (single use, bound to the step's
 * digest), checked again when the framework runs the tool. A framework approval alone
 * never runs it, so an agent cannot approve itself: deciding needs an admin or approver
 * key, which `decideApproval` takes from the application, never from the agent's guard.
 */
import { GuardClient } from '../client/index.js';
import type { ApprovalRecord, ApprovalStatus } from '../model/index.js';
import type { GuardAgent, StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';

/** `framework` (default): an ask is the framework's approval prompt; `wait`: the call waits for the decision as `check` does. */
export type FrameworkApprovalMode = 'framework' | 'wait';

/** guardctl's approval behind a framework's approval prompt: what the application shows the person. */
export interface GuardApproval {
  /** What `guardctl approvals show|approve|deny` and `/api/v1/approvals/{id}` take. */
  id: string;
  status: ApprovalStatus;
  expires_at: string;
  /** The ask control that matched (null when the disclosure hides it from the verdict). */
  control_name: string | null;
  tool_name: string;
}

/** Calls remembered per guard: a framework's call id outlives one tool execution, not the process. */
const MAX_CALLS = 10_000;

class Bounded<V> {
  readonly #map = new Map<string, V>();
  set(key: string, value: V): void {
    this.#map.delete(key);
    this.#map.set(key, value);
    if (this.#map.size > MAX_CALLS) this.#map.delete(this.#map.keys().next().value!);
  }
  get(key: string): V | undefined {
    return this.#map.get(key);
  }
  take(key: string): V | undefined {
    const value = this.#map.get(key);
    this.#map.delete(key);
    return value;
  }
}

interface KeptVerdict {
  key: string;
  verdict: Verdict;
}

/** One guard's framework calls: the approvals they asked for, and verdicts a later hook of the same call uses. */
class FrameworkCalls {
  readonly approvals = new Bounded<GuardApproval>();
  readonly verdicts = new Bounded<KeptVerdict>();
}

const callsOfGuard = new WeakMap<GuardAgent, FrameworkCalls>();

function callsOf(guard: GuardAgent): FrameworkCalls {
  let calls = callsOfGuard.get(guard);
  if (!calls) callsOfGuard.set(guard, (calls = new FrameworkCalls()));
  return calls;
}

/** Remembers the pending approval of a call the framework now asks about. */
export function rememberApproval(guard: GuardAgent, callId: string, step: StepInput, verdict: Verdict): void {
  const approval = verdict.approval;
  if (!approval) return;
  callsOf(guard).approvals.set(callId, {
    id: approval.id, status: approval.status, expires_at: approval.expires_at, control_name: verdict.control_name, tool_name: step.name,
  });
}

/** guardctl's approval of a framework call, when the call asked for one. */
export function approvalOfCall(guard: GuardAgent, callId: string): GuardApproval | undefined {
  return callsOf(guard).approvals.get(callId);
}

/**
 * The approval hook decided a call (allow, deny, steer): the execution hook of the same
 * call takes that verdict instead of checking again, so the step is counted once (rate and
 * session controls). Bound to the step's name and input: another step never takes it.
 */
export function keepVerdict(guard: GuardAgent, callId: string, step: StepInput, verdict: Verdict): void {
  callsOf(guard).verdicts.set(callId, { key: keyOf(step), verdict });
}

export function takeVerdict(guard: GuardAgent, callId: string | undefined, step: StepInput): Verdict | undefined {
  if (callId === undefined) return undefined;
  const kept = callsOf(guard).verdicts.take(callId);
  return kept?.key === keyOf(step) ? kept.verdict : undefined;
}

function keyOf(step: StepInput): string {
  return JSON.stringify([step.type, step.name, step.input ?? null]);
}

export interface DecideApprovalOptions {
  /** An admin key or one of GUARD_APPROVER_API_KEYS: the application's (the person's), never the agent's. */
  apiKey: string;
  reason?: string;
}

/**
 * Approves or denies guardctl's approval for the person who answered the framework's
 * prompt, with the application's approver key. A regular key gets the server's 403
 * (ApiError): the framework's answer alone then runs nothing.
 */
export async function decideApproval(
  guard: GuardAgent,
  approval: string | GuardApproval,
  verb: 'approve' | 'deny',
  options: DecideApprovalOptions,
): Promise<ApprovalRecord> {
  const client = new GuardClient({ serverUrl: guard.client.serverUrl, apiKey: options.apiKey, timeoutMs: guard.client.timeoutMs });
  const id = typeof approval === 'string' ? approval : approval.id;
  return verb === 'approve' ? client.approvals.approve(id, options.reason) : client.approvals.deny(id, options.reason);
}

/** A pending ask: what the framework's approval prompt is for. */
export function isPendingAsk(verdict: Verdict): boolean {
  return verdict.decision === 'ask' && verdict.approval?.status === 'pending';
}
