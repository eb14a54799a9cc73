/**
 * Binds an `ask` answer to an approval in the store (docs/approvals.md). The engine only
 * says that an ask control matched; here the step's digest finds or opens its approval,
 * and the answer becomes: ask (pending), allow (this submission used an approval), or
 * deny (denied, or expired). A different input is a different digest, so an approval is
 * never stretched to a step nobody saw.
 */
import { createHash } from 'node:crypto';
import type { CompiledControlSet } from '../engine/index.js';
import { countedOf, countedText, type CountedStep } from '../counting/index.js';
import { canonicalJson } from '../gitops/canonical.js';
import {
  approvalTimeoutMs,
  type ApprovalRecord,
  type ApprovalRef,
  type EvaluationResult,
  type Stage,
  type Step,
} from '../model/index.js';
import type { Redactor } from '../recording/redact.js';
import type { ApprovalOutcome, Store } from '../store/types.js';

/** What happened to an approval, as the live stream, the webhook and waiting requests hear it. */
export type ApprovalEventKind = 'asked' | 'approved' | 'denied' | 'expired' | 'used';

export type ApprovalListener = (kind: ApprovalEventKind, approval: ApprovalRecord) => void;

export interface GateRequest {
  agent_name: string;
  stage: Stage;
  step: Step;
}

/**
 * The digest an approval is bound to: agent, stage, step type, name and input in canonical
 * JSON (key order never matters, every other difference does); at `post` the output too,
 * so an approved result is the result a person saw.
 */
export function approvalDigestOf(request: GateRequest): string {
  const { agent_name, stage, step } = request;
  const bound = [agent_name, stage, step.type, step.name, step.input ?? null, stage === 'post' ? (step.output ?? null) : null];
  // JSON writes Infinity (1e400 parsed) as null: such numbers are bound beside the text, so
  // `{"amount":1e400}` never uses the approval of `{"amount":null}`. Other steps hash as before.
  const nonFinite = nonFiniteNumbersIn(bound, '$', []);
  const text = nonFinite.length === 0 ? canonicalJson(bound) : `${canonicalJson(bound)}\n${JSON.stringify(nonFinite)}`;
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Where `value` holds numbers JSON cannot write, with their values (`$[4]["amount"]=Infinity`). */
function nonFiniteNumbersIn(value: unknown, path: string, out: string[]): string[] {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) out.push(`${path}=${value}`);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => nonFiniteNumbersIn(v, `${path}[${i}]`, out));
  } else if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value).sort()) nonFiniteNumbersIn((value as Record<string, unknown>)[key], `${path}[${JSON.stringify(key)}]`, out);
  }
  return out;
}

export class ApprovalGate {
  constructor(
    private readonly store: Pick<Store, 'submitApproval' | 'useApproved' | 'giveBackApproval'>,
    /** The recordings' redaction: an approval shows the step as a recorded step is shown. */
    private readonly redactor: Redactor,
    private readonly listener: ApprovalListener,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The answer for a result whose decision is ask; any other result is returned as it is.
   * `counted`: what the step's counting controls added (noteCounts), kept with a new question.
   */
  async settle(result: EvaluationResult, request: GateRequest, set: CompiledControlSet, actor: string, counted: readonly CountedStep[] = []): Promise<EvaluationResult> {
    if (result.decision !== 'ask') return result;
    const asking = result.matches.find((m) => m.action === 'ask');
    if (asking === undefined) return result;
    const control = set.controls.find((c) => c.control_id === asking.control_id);
    // The name too is the agent's text: shown (API, webhook, audit) as the recorded step shows it.
    const shown = this.redactor.redact(request.step) as { name?: unknown };
    const { approval, outcome } = await this.store.submitApproval(
      {
        digest: approvalDigestOf(request),
        agent_name: request.agent_name,
        stage: request.stage,
        step_type: request.step.type,
        step_name: typeof shown.name === 'string' ? shown.name : request.step.name,
        control_id: asking.control_id,
        control_name: asking.control_name,
        step_json: JSON.stringify(shown),
        counted: countedText(counted),
        timeout_ms: control?.approvalTimeoutMs ?? approvalTimeoutMs(undefined),
        actor,
      },
      this.now(),
    );
    const kind = eventOf(outcome);
    if (kind !== null) this.listener(kind, approval);
    return answerOf(result, approval, outcome);
  }

  /**
   * The approval this exact step was given and has not used, taken (used) now, with what
   * its question counted: the step is the one that asked, submitted again, so its set's
   * counters must not count that twice (routes/evaluation.ts). Null when it has none.
   * Then either `announceUsed` once the step is answered, or `giveBack` if its request failed.
   */
  async takeApproved(request: GateRequest, actor: string): Promise<{ approval: ApprovalRecord; counted: CountedStep[] } | null> {
    const used = await this.store.useApproved(approvalDigestOf(request), actor, this.now());
    return used === null ? null : { approval: used.approval, counted: countedOf(used.counted) };
  }

  /** The step that took `approval` was answered: the live stream, the webhook and waiting requests hear of its use. */
  announceUsed(approval: ApprovalRecord): void {
    this.listener('used', approval);
  }

  /**
   * The request that took `approval` failed before its step was answered (the session or
   * the database away): the step did not run, so the person's approval waits for the next
   * submission instead of being spent on nothing.
   */
  async giveBack(approval: ApprovalRecord, actor: string): Promise<boolean> {
    return approval.used_at === null ? false : this.store.giveBackApproval(approval.id, Date.parse(approval.used_at), actor, this.now());
  }

  /** The answer for a result whose decision is ask, given the approval `takeApproved` took. */
  approvedAnswer(result: EvaluationResult, approval: ApprovalRecord): EvaluationResult {
    return answerOf(result, approval, 'approved');
  }
}

function eventOf(outcome: ApprovalOutcome): ApprovalEventKind | null {
  switch (outcome) {
    case 'created':
      return 'asked';
    case 'approved':
      return 'used';
    case 'expired':
      return 'expired';
    case 'pending':
    case 'denied':
      return null;
  }
}

export function approvalRefOf(approval: ApprovalRecord): ApprovalRef {
  const ref: ApprovalRef = { id: approval.id, status: approval.status, expires_at: approval.expires_at };
  if (approval.decided_by !== null) ref.decided_by = approval.decided_by;
  if (approval.reason !== null) ref.reason = approval.reason;
  return ref;
}

function answerOf(result: EvaluationResult, approval: ApprovalRecord, outcome: ApprovalOutcome): EvaluationResult {
  const ref = approvalRefOf(approval);
  switch (outcome) {
    case 'created':
    case 'pending':
      return { ...result, approval: ref };
    case 'approved':
      // A person allowed exactly this step, this once.
      return { ...result, is_safe: true, decision: 'allow', confidence: 1, approval: ref };
    case 'denied':
    case 'expired':
      return { ...result, is_safe: false, decision: 'deny', approval: ref };
  }
}
