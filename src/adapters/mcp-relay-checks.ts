/**
 * The MCP gateway's checks of what the server sends back: the answer to a checked request
 * (a post check of its step), and the notifications it sends while steps are pending.
 * Every check belongs to the client's session.
 */
import { ErrorCode, type JSONRPCMessage, type JSONRPCNotification, type JSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';
import { McpApprovals, type GatewayApprovalOptions } from './mcp-approval.js';
import { refusal, stepText } from './mcp-steps.js';
import { messageOf, shown } from './mcp-text.js';

export interface RelayChecksOptions extends GatewayApprovalOptions {
  /** The client's session (HTTP face): every check of the relay belongs to it. */
  sessionId?: (() => string | undefined) | undefined;
}

export class RelayChecks {
  /** An ask put to the person in the client (elicitation), or waited for. */
  readonly approvals = new McpApprovals();

  constructor(private readonly o: RelayChecksOptions) {}

  /** Every check of the relay: the step, as part of the client's session; an ask is put to a person (mcp-approval.ts). */
  decide(step: StepInput, stage: 'pre' | 'post'): Promise<Verdict> {
    return this.approvals.decide(this.o, step, stage, this.o.sessionId?.());
  }

  /** The answer to a checked request, or the refusal that replaces it when a post control does not allow its output. */
  async output(id: RequestId, step: StepInput, answer: JSONRPCMessage, output: unknown): Promise<JSONRPCMessage> {
    let verdict: Verdict;
    try {
      verdict = await this.decide({ ...step, output }, 'post');
    } catch (error) {
      this.o.report(`checking the answer to ${stepText(step)} failed: ${messageOf(error)}`);
      return { jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: 'the guard could not check the answer to this request' } };
    }
    this.reportUnavailable(verdict, step, 'post');
    return verdict.decision === 'allow' ? answer : refusal(id, step.type, verdict);
  }

  /**
   * A notification the server sends while a tool runs (a log line, a progress message), or a
   * request of its own (sampling, elicitation), can carry what the tool read: it is checked as
   * output of every pending call, and withheld unless each allows it.
   */
  async notification(notification: JSONRPCNotification | JSONRPCRequest, calls: StepInput[]): Promise<JSONRPCMessage | null> {
    const output = notification.params ?? null;
    for (const step of calls) {
      let verdict: Verdict;
      try {
        verdict = await this.decide({ ...step, output }, 'post');
      } catch (error) {
        this.o.report(`withheld a ${shown(notification.method)} ${'id' in notification ? 'request' : 'notification'} of the MCP server sent during ${stepText(step)}: checking it failed: ${messageOf(error)}`);
        return null;
      }
      this.reportUnavailable(verdict, step, 'post');
      if (verdict.decision !== 'allow') {
        this.o.report(`withheld a ${shown(notification.method)} ${'id' in notification ? 'request' : 'notification'} of the MCP server sent during ${stepText(step)}: a post control did not allow it`);
        return null;
      }
    }
    return notification;
  }

  /** The model reads only that the call could not be checked; the operator reads why. */
  reportUnavailable(verdict: Verdict, step: StepInput, stage: 'pre' | 'post'): void {
    if (!verdict.unavailable) return;
    this.o.report(`could not check ${stepText(step)} (${stage}), so it was refused: ${messageOf(verdict.error?.cause ?? verdict.error)}`);
  }
}
