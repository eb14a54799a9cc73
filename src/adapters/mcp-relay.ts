/**
 * The MCP gateway's message relay. JSON-RPC messages pass between the client's transport
 * and the server's untouched (initialize, tools/list, resources, prompts, notifications,
 * progress, cancellation, the server's own requests) except `tools/call`: its arguments
 * are checked before it reaches the server and its result before it reaches the client,
 * and a deny or steer answers the call with `isError: true` and the verdict's text.
 *
 * Every client request forwarded to the server is tracked until answered, so that a
 * server that exits, hangs or garbles its output leaves no client request unanswered.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { GuardAgent, StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';
import { decide, type AdapterOptions } from './decisions.js';

export interface RelayOptions extends AdapterOptions {
  guard: GuardAgent;
  client: Transport;
  server: Transport;
  /** The name steps carry as `context.mcp_server` until the server's initialize answer names it. */
  serverName: string;
  /** Fixed name: the server's own name (serverInfo.name) is not used. */
  serverNameFixed: boolean;
  /** A forwarded request the server has not answered after this long is answered with an error; 0: never. */
  requestTimeoutMs: number;
  report(line: string): void;
  /** The server's protocol version, once initialize is answered (the HTTP transport sends it as a header). */
  onProtocolVersion?(version: string): void;
}

interface Pending {
  method: string;
  /** Set for tools/call: the step whose result is checked post. */
  step: StepInput | null;
  /** Sent on to the server (a tools/call waits for its pre check first). */
  forwarded: boolean;
  cancelled: boolean;
  timer: NodeJS.Timeout | null;
}

/** Keys of the pending map: JSON-RPC ids may be numbers or strings, and 1 and "1" differ. */
function keyOf(id: RequestId): string {
  return typeof id === 'number' ? `n${id}` : `s${id}`;
}

export class McpRelay {
  readonly #pending = new Map<string, Pending>();
  #serverName: string;
  #closed = false;

  constructor(private readonly o: RelayOptions) {
    this.#serverName = o.serverName;
  }

  get serverName(): string {
    return this.#serverName;
  }

  /** Requests forwarded (or being checked) and not yet answered. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  fromClient(message: JSONRPCMessage): void {
    if (isJSONRPCRequest(message)) {
      if (message.method === 'tools/call') void this.#toolCall(message);
      else this.#forwardRequest(message, null);
      return;
    }
    if (isJSONRPCNotification(message) && message.method === 'notifications/cancelled') {
      const id = (message.params as { requestId?: RequestId } | undefined)?.requestId;
      const pending = id === undefined ? undefined : this.#pending.get(keyOf(id));
      if (pending) {
        // A cancelled request gets no answer (MCP): stop waiting for one.
        pending.cancelled = true;
        this.#settle(id!);
        if (!pending.forwarded) return;
      }
    }
    this.#send(this.o.server, message, 'server');
  }

  fromServer(message: JSONRPCMessage): void {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = message.id;
      const pending = id === undefined || id === null ? undefined : this.#pending.get(keyOf(id));
      if (!pending) {
        this.o.report(`dropped an answer of the MCP server to request ${JSON.stringify(id)}, which is not pending (answered already, timed out or cancelled)`);
        return;
      }
      this.#settle(id!);
      if (isJSONRPCResultResponse(message)) {
        if (pending.method === 'initialize') this.#learnServer(message.result);
        if (pending.step) {
          void this.#checkResult(id!, pending.step, message);
          return;
        }
      }
    }
    this.#send(this.o.client, message, 'client');
  }

  /** The server sent something that is not JSON-RPC: it cannot be trusted to answer what is pending. */
  serverGarbled(error: Error): void {
    this.o.report(`the MCP server sent a message that is not JSON-RPC (${error.message}); answering the ${this.#pending.size} pending request(s) with an error`);
    this.failAll(ErrorCode.InternalError, 'the MCP server answered with malformed JSON-RPC');
  }

  /** Answers every pending request with an error (the server is gone or broken). */
  failAll(code: number, message: string): void {
    for (const [key, pending] of [...this.#pending]) {
      this.#pending.delete(key);
      if (pending.timer) clearTimeout(pending.timer);
      if (!pending.cancelled) this.#answerError(idOf(key), code, message);
    }
  }

  close(): void {
    this.#closed = true;
    for (const pending of this.#pending.values()) if (pending.timer) clearTimeout(pending.timer);
  }

  async #toolCall(request: JSONRPCRequest): Promise<void> {
    const params = request.params as { name?: unknown; arguments?: unknown } | undefined;
    if (typeof params?.name !== 'string' || params.name === '') {
      this.#answerError(request.id, ErrorCode.InvalidParams, 'tools/call needs params.name, the tool to call');
      return;
    }
    const step: StepInput = {
      type: 'tool',
      name: params.name,
      // A call that carries no arguments is a step with no input: null, as everywhere else.
      input: params.arguments ?? null,
      context: { mcp_server: this.#serverName },
    };
    const pending: Pending = { method: request.method, step, forwarded: false, cancelled: false, timer: null };
    this.#pending.set(keyOf(request.id), pending);
    let verdict: Verdict;
    try {
      verdict = await decide(this.o.guard, step, 'pre', this.o);
    } catch (error) {
      this.#settle(request.id);
      this.o.report(`checking tools/call "${step.name}" failed: ${messageOf(error)}`);
      this.#answerError(request.id, ErrorCode.InternalError, 'the guard could not check this call, so it was not run');
      return;
    }
    if (pending.cancelled) return;
    this.#reportUnavailable(verdict, step.name, 'pre');
    if (verdict.decision !== 'allow') {
      this.#settle(request.id);
      this.#answerRefusal(request.id, verdict);
      return;
    }
    this.#forwardRequest(request, pending);
  }

  async #checkResult(id: RequestId, step: StepInput, response: JSONRPCMessage & { result: Record<string, unknown> }): Promise<void> {
    let verdict: Verdict;
    try {
      verdict = await decide(this.o.guard, { ...step, output: response.result }, 'post', this.o);
    } catch (error) {
      this.o.report(`checking the result of tools/call "${step.name}" failed: ${messageOf(error)}`);
      this.#answerError(id, ErrorCode.InternalError, 'the guard could not check the result of this call');
      return;
    }
    this.#reportUnavailable(verdict, step.name, 'post');
    if (verdict.decision === 'allow') this.#send(this.o.client, response, 'client');
    else this.#answerRefusal(id, verdict);
  }

  /** The model reads only that the call could not be checked; the operator reads why. */
  #reportUnavailable(verdict: Verdict, tool: string, stage: 'pre' | 'post'): void {
    if (!verdict.unavailable) return;
    this.o.report(`could not check tools/call "${tool}" (${stage}), so it was refused: ${messageOf(verdict.error?.cause ?? verdict.error)}`);
  }

  #forwardRequest(request: JSONRPCRequest, tracked: Pending | null): void {
    const pending = tracked ?? { method: request.method, step: null, forwarded: false, cancelled: false, timer: null };
    pending.forwarded = true;
    const key = keyOf(request.id);
    this.#pending.set(key, pending);
    const timeout = this.o.requestTimeoutMs;
    if (timeout > 0) {
      pending.timer = setTimeout(() => {
        if (this.#pending.get(key) !== pending) return;
        this.#pending.delete(key);
        this.o.report(`the MCP server did not answer ${request.method} (id ${JSON.stringify(request.id)}) within ${timeout / 1000}s`);
        this.#answerError(request.id, ErrorCode.RequestTimeout, `the MCP server did not answer ${request.method} within ${timeout / 1000}s`);
      }, timeout);
      pending.timer.unref();
    }
    this.o.server.send(request).catch((error: unknown) => {
      if (this.#pending.get(key) !== pending) return;
      this.#settle(request.id);
      this.o.report(`could not send ${request.method} to the MCP server: ${messageOf(error)}`);
      this.#answerError(request.id, ErrorCode.ConnectionClosed, `the MCP server could not be reached: ${messageOf(error)}`);
    });
  }

  #settle(id: RequestId): void {
    const key = keyOf(id);
    const pending = this.#pending.get(key);
    if (pending?.timer) clearTimeout(pending.timer);
    this.#pending.delete(key);
  }

  #learnServer(result: Record<string, unknown>): void {
    const info = result.serverInfo as { name?: unknown } | undefined;
    if (!this.o.serverNameFixed && typeof info?.name === 'string' && info.name !== '') this.#serverName = info.name;
    if (typeof result.protocolVersion === 'string') this.o.onProtocolVersion?.(result.protocolVersion);
  }

  /** A deny or steer, as a tool result the model reads (MCP: tool errors are results, not protocol errors). */
  #answerRefusal(id: RequestId, verdict: Verdict): void {
    this.#send(this.o.client, { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: verdict.message! }], isError: true } }, 'client');
  }

  #answerError(id: RequestId, code: number, message: string): void {
    this.#send(this.o.client, { jsonrpc: '2.0', id, error: { code, message } }, 'client');
  }

  #send(to: Transport, message: JSONRPCMessage, side: 'client' | 'server'): void {
    if (this.#closed && side === 'server') return;
    to.send(message).catch((error: unknown) => this.o.report(`could not send to the ${side}: ${messageOf(error)}`));
  }
}

function idOf(key: string): RequestId {
  return key.startsWith('n') ? Number(key.slice(1)) : key.slice(1);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
