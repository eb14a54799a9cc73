/**
 * The MCP gateway's checks of what the server sends back: the answer to a checked request
 * (a post check of its step), and the notifications it sends while steps are pending.
 * Every check belongs to the client's session.
 */
import { randomUUID } from 'node:crypto';
import { ErrorCode, type JSONRPCMessage, type JSONRPCNotification, type JSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';
import { McpApprovals, type GatewayApprovalOptions } from './mcp-approval.js';
import { withBlobText } from './mcp-blob-text.js';
import { MAX_RECENT_STEPS } from './mcp-recent-steps.js';
import { refusal, stepText, toolError } from './mcp-steps.js';
import { messageOf, shown } from './mcp-text.js';

export interface RelayChecksOptions extends GatewayApprovalOptions {
  /** The client's session (HTTP face): every check of the relay belongs to it. */
  sessionId?: (() => string | undefined) | undefined;
}

export class RelayChecks {
  /** An ask put to the person in the client (elicitation), or waited for. */
  readonly approvals = new McpApprovals();

  /**
   * The session derived for this relay's client when none is given: a relay serves one
   * client (the stdio face: the proxy's whole run), so its steps are one session, and the
   * labels its steps add decide its later ones. init's sessionId, when given, comes first.
   */
  readonly #derived = `mcp:${randomUUID()}`;

  /** Whether the report that later messages are withheld past RecentSteps' bound was made. */
  #overflowSaid = false;

  constructor(private readonly o: RelayChecksOptions) {}

  /** Every check of the relay: the step, as part of the client's session; an ask is put to a person (mcp-approval.ts). */
  decide(step: StepInput, stage: 'pre' | 'post'): Promise<Verdict> {
    return this.approvals.decide(this.o, step, stage, this.o.sessionId?.() ?? this.#derived);
  }

  /**
   * The answer to a checked request, or the refusal that replaces it when a post control
   * does not allow its output: of its own step, or of the `others` the server was sent
   * (RecentSteps.others; null when it forgot one), as the server could put there what they read.
   */
  async output(id: RequestId, step: StepInput, answer: JSONRPCMessage, output: unknown, others: StepInput[] | null = []): Promise<JSONRPCMessage> {
    let verdict: Verdict;
    const checked = withBlobText(output);
    try {
      verdict = await this.decide({ ...step, output: checked }, 'post');
    } catch (error) {
      this.o.report(`checking the answer to ${stepText(step)} failed: ${messageOf(error)}`);
      return { jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: 'the guard could not check the answer to this request' } };
    }
    this.reportUnavailable(verdict, step, 'post');
    if (verdict.decision !== 'allow') return refusal(id, step.type, verdict);
    if (others?.length === 0 || (await this.#allowed(`the answer to ${stepText(step)}`, output, [], others))) return answer;
    const message = "the gateway withheld the MCP server's answer: a post control of another call did not allow it";
    return step.type === 'tool' ? toolError(id, message) : { jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message } };
  }

  /**
   * A notification the server sends (a log line, a progress message), or a request of its
   * own (sampling, elicitation), can carry what a tool read: it is checked as output of every
   * pending call (`during`) and of the calls sent to the server before (`after`, RecentSteps;
   * null when it forgot one, and the message is withheld), and
   * withheld unless each allows it. Checked only while calls were pending, a server could
   * wait for the call's answer, then send what the tool read to the client's model.
   */
  async notification(notification: JSONRPCNotification | JSONRPCRequest, during: StepInput[], after: StepInput[] | null = []): Promise<JSONRPCMessage | null> {
    const what = `a ${shown(notification.method)} ${'id' in notification ? 'request' : 'notification'} of the MCP server`;
    return (await this.#allowed(what, notification.params ?? null, during, after)) ? notification : null;
  }

  /**
   * The server's answer to a request that is not a step (completion/complete, resources/list,
   * ping, an error of any): as free to carry what a tool read as a notification, so checked
   * the same way, and replaced by an error when a post control does not allow it.
   */
  async answer(id: RequestId, method: string, answer: JSONRPCMessage, output: unknown, during: StepInput[], after: StepInput[] | null): Promise<JSONRPCMessage> {
    if (await this.#allowed(`the MCP server's answer to ${shown(method)}`, output, during, after)) return answer;
    return { jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: "the gateway withheld the MCP server's answer: a post control of a call did not allow it" } };
  }

  /** `given`: what the server sent, checked with the text of its base64 blobs (withBlobText). */
  async #allowed(what: string, given: unknown, during: StepInput[], after: StepInput[] | null): Promise<boolean> {
    if (after === null) {
      // Said once: from now on every such message is withheld, and a server's progress would flood the log.
      if (!this.#overflowSaid) this.o.report(`withheld ${what}, and will withhold every later message of the MCP server that is not the answer to a call (and the answers too, when a step let go was kept for a control reading its output and more, selector *): the session sent the server more than ${MAX_RECENT_STEPS} steps whose post controls read more than their output, so these cannot be checked as the output of each; a new session starts afresh`);
      this.#overflowSaid = true;
      return false;
    }
    const output = withBlobText(given);
    for (const [step, when] of [...during.map((s) => [s, 'during'] as const), ...after.map((s) => [s, 'after'] as const)]) {
      let verdict: Verdict;
      try {
        verdict = await this.decide({ ...step, output }, 'post');
      } catch (error) {
        this.o.report(`withheld ${what} sent ${when} ${stepText(step)}: checking it failed: ${messageOf(error)}`);
        return false;
      }
      this.reportUnavailable(verdict, step, 'post');
      if (verdict.decision !== 'allow') {
        this.o.report(`withheld ${what} sent ${when} ${stepText(step)}: a post control did not allow it`);
        return false;
      }
    }
    return true;
  }

  /** The model reads only that the call could not be checked; the operator reads why. */
  reportUnavailable(verdict: Verdict, step: StepInput, stage: 'pre' | 'post'): void {
    if (!verdict.unavailable) return;
    this.o.report(`could not check ${stepText(step)} (${stage}), so it was refused: ${messageOf(verdict.error?.cause ?? verdict.error)}`);
  }
}
