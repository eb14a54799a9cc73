/**
 * The MCP gateway's message relay. JSON-RPC messages pass between the client's transport
 * and the server's (initialize, tools/list, resources, prompts, notifications, progress,
 * cancellation, the server's own requests) except `tools/call`: its arguments are checked
 * before it reaches the server and its result before it reaches the client, and a deny or
 * steer answers the call with `isError: true` and the verdict's text.
 *
 * What a client cannot do through it (docs/security.md, "The MCP gateway"):
 * - call a tool under a name the server did not declare exactly (mcp-tools.ts);
 * - send a tools/call the gateway cannot answer after checking: as a notification (no
 *   id), under another spelling of the method, or task-augmented (its result would come
 *   later, through another method);
 * - have an answer taken for another request's: the server sees ids of the relay's own
 *   (a counter), never the client's, so a reused, retyped ("1" and 1) or timed-out id
 *   cannot pair an unchecked request with a tool's result; a request whose id is already
 *   pending is refused.
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
  type JSONRPCNotification,
  type JSONRPCRequest,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { GuardAgent, StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';
import { decide, type AdapterOptions } from './decisions.js';
import { folded, looseKeyOf, messageOf, shown } from './mcp-text.js';
import { UpstreamTools } from './mcp-tools.js';

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

type Outcome = { result: Record<string, unknown> } | { error: { code: number; message: string } };

interface Pending {
  /** The client's id; null for the relay's own requests. */
  clientId: RequestId | null;
  method: string;
  /** Set for tools/call: the step whose result is checked post. */
  step: StepInput | null;
  /** The id the server sees, once forwarded. */
  upstreamId: number | null;
  settled: boolean;
  cancelled: boolean;
  timer: NodeJS.Timeout | null;
  /** The relay's own request: the answer goes here, not to the client. */
  own?: (outcome: Outcome) => void;
}

export class McpRelay {
  readonly #byClient = new Map<string, Pending>();
  readonly #byUpstream = new Map<number, Pending>();
  readonly #tools: UpstreamTools;
  #nextUpstreamId = 1;
  #serverName: string;
  #closed = false;
  #toClient: Promise<void> = Promise.resolve();

  constructor(private readonly o: RelayOptions) {
    this.#serverName = o.serverName;
    this.#tools = new UpstreamTools((cursor) => this.#ownRequest('tools/list', cursor === undefined ? {} : { cursor }));
  }

  get serverName(): string {
    return this.#serverName;
  }

  /** Requests forwarded (or being checked) and not yet answered. */
  get pendingCount(): number {
    return this.#all().size;
  }

  fromClient(message: JSONRPCMessage): void {
    if (isJSONRPCRequest(message)) this.#request(message);
    else if (isJSONRPCNotification(message)) this.#notification(message);
    // The client's answers to the server's own requests (sampling, elicitation, roots).
    else this.#send(this.o.server, message, 'server');
  }

  /** A line of the client holding a JSON-RPC batch: not relayed (MCP since 2025-06-18 has none). */
  clientBatch(items: unknown[]): void {
    this.o.report(`refused a JSON-RPC batch of ${items.length} message(s) from the client: each message must come on its own line`);
    for (const item of items) {
      const id = (item as { id?: unknown } | null)?.id;
      if (typeof id === 'string' || typeof id === 'number') {
        this.#answerError(id, ErrorCode.InvalidRequest, 'JSON-RPC batches are not relayed: send each message on its own line');
      }
    }
  }

  fromServer(message: JSONRPCMessage): void {
    if (isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) {
      const id = message.id;
      const pending = typeof id === 'number' ? this.#byUpstream.get(id) : undefined;
      if (!pending) {
        this.o.report(`dropped an answer of the MCP server to request ${JSON.stringify(id)}, which is not pending (answered already, timed out or cancelled)`);
        return;
      }
      this.#settle(pending);
      if (pending.own) {
        pending.own(isJSONRPCResultResponse(message) ? { result: message.result } : { error: message.error });
        return;
      }
      const clientId = pending.clientId!;
      const answer = { ...message, id: clientId };
      if (isJSONRPCResultResponse(message) && pending.method === 'initialize') this.#learnServer(message.result);
      // An error answer is the call's output as much as a result is: its message and data can carry what the tool read.
      const output = isJSONRPCResultResponse(message) ? message.result : message.error;
      this.#inOrder(pending.step ? this.#checkOutput(clientId, pending.step, answer, output) : Promise.resolve(answer));
      return;
    }
    if (isJSONRPCNotification(message) && message.method === 'notifications/tools/list_changed') this.#tools.invalidate();
    const calls = isJSONRPCNotification(message) ? this.#pendingCalls() : [];
    if (calls.length > 0) this.#inOrder(this.#checkNotification(message, calls));
    else this.#inOrder(Promise.resolve(message));
  }

  /** The server sent something that is not JSON-RPC: it cannot be trusted to answer what is pending. */
  serverGarbled(error: Error): void {
    this.o.report(`the MCP server sent a message that is not JSON-RPC (${error.message}); answering the ${this.pendingCount} pending request(s) with an error`);
    this.failAll(ErrorCode.InternalError, 'the MCP server answered with malformed JSON-RPC');
  }

  /** The server sent a line longer than the proxy reads: whatever it answered is lost. */
  serverOversize(limit: string): void {
    this.o.report(`a message of the MCP server is larger than ${limit}, the most the proxy reads; it was skipped, answering the ${this.pendingCount} pending request(s) with an error`);
    this.failAll(ErrorCode.InternalError, `the MCP server answered with a message larger than ${limit}, which the proxy does not read`);
  }

  /** Answers every pending request with an error (the server is gone or broken). */
  failAll(code: number, message: string): void {
    for (const pending of this.#all()) {
      this.#settle(pending);
      this.#fail(pending, code, message);
    }
  }

  close(): void {
    this.#closed = true;
    for (const pending of this.#all()) if (pending.timer) clearTimeout(pending.timer);
  }

  #request(request: JSONRPCRequest): void {
    const key = looseKeyOf(request.id);
    if (this.#byClient.has(key)) {
      this.o.report(`refused ${request.method} (id ${JSON.stringify(request.id)}): a request with that id is already pending`);
      this.#answerError(request.id, ErrorCode.InvalidRequest, `request id ${JSON.stringify(request.id)} is already pending: give each request an id of its own`);
      return;
    }
    if (request.method !== 'tools/call' && folded(request.method) === 'tools/call') {
      this.o.report(`refused a request of method ${shown(request.method)}: a tool call is relayed only as "tools/call"`);
      this.#answerError(request.id, ErrorCode.MethodNotFound, `method ${shown(request.method)} is not relayed: a tool call is "tools/call", exactly`);
      return;
    }
    const pending: Pending = { clientId: request.id, method: request.method, step: null, upstreamId: null, settled: false, cancelled: false, timer: null };
    this.#byClient.set(key, pending);
    if (request.method === 'tools/call') void this.#toolCall(request, pending);
    else this.#forward(request, pending);
  }

  #notification(notification: JSONRPCNotification): void {
    if (notification.method === 'notifications/cancelled') {
      const id = (notification.params as { requestId?: RequestId } | undefined)?.requestId;
      const pending = id === undefined || id === null ? undefined : this.#byClient.get(looseKeyOf(id));
      // A cancelled request gets no answer (MCP): stop waiting for one, and tell the server under its id.
      if (pending && pending.clientId === id) {
        pending.cancelled = true;
        this.#settle(pending);
        if (pending.upstreamId !== null) {
          this.#send(this.o.server, { ...notification, params: { ...notification.params, requestId: pending.upstreamId } }, 'server');
        }
      }
      return;
    }
    if (!notification.method.startsWith('notifications/')) {
      // Nothing could answer it with a refusal, and a lenient server might run it.
      const what = folded(notification.method) === 'tools/call' ? 'tools/call' : `request of method ${shown(notification.method)}`;
      this.o.report(`dropped a ${what} sent as a notification (no id): a call is relayed only as a request, whose answer can be checked`);
      return;
    }
    this.#send(this.o.server, notification, 'server');
  }

  async #toolCall(request: JSONRPCRequest, pending: Pending): Promise<void> {
    const params = request.params as { name?: unknown; arguments?: unknown; task?: unknown } | undefined;
    const refuse = (code: number, message: string): void => {
      this.#settle(pending);
      this.#answerError(request.id, code, message);
    };
    if (typeof params?.name !== 'string' || params.name === '') return refuse(ErrorCode.InvalidParams, 'tools/call needs params.name, the tool to call');
    const name = params.name;
    const args = params.arguments;
    // MCP's arguments are an object; a lenient server may parse a string or unwrap an array the selectors never saw.
    if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) {
      this.o.report(`refused tools/call ${shown(name)}: its arguments are ${args === null ? 'null' : Array.isArray(args) ? 'an array' : `a ${typeof args}`}, not an object`);
      return refuse(ErrorCode.InvalidParams, 'tools/call params.arguments must be an object (or absent, for a call without arguments)');
    }
    if (params.task !== undefined) {
      return refuse(ErrorCode.InvalidParams, 'a task-augmented tools/call is not relayed: its result would arrive where it cannot be checked');
    }
    let declared: ReadonlySet<string>;
    try {
      declared = await this.#tools.names();
    } catch (error) {
      if (pending.settled) return;
      this.o.report(`could not read the MCP server's tools (tools/list), so tools/call ${shown(name)} was refused: ${messageOf(error)}`);
      return refuse(ErrorCode.InternalError, "the gateway could not read the MCP server's tools, so the call was not run");
    }
    if (pending.settled) return;
    if (!declared.has(name)) {
      this.o.report(`refused tools/call ${shown(name)}: not a tool the MCP server declared`);
      return refuse(ErrorCode.InvalidParams, `${shown(name)} is not a tool the MCP server declared (tool names are compared exactly)`);
    }
    const step: StepInput = {
      type: 'tool',
      name,
      // A call that carries no arguments is a step with no input: null, as everywhere else.
      input: args ?? null,
      context: { mcp_server: this.#serverName },
    };
    pending.step = step;
    let verdict: Verdict;
    try {
      verdict = await decide(this.o.guard, step, 'pre', this.o);
    } catch (error) {
      if (pending.settled) return;
      this.o.report(`checking tools/call ${shown(name)} failed: ${messageOf(error)}`);
      return refuse(ErrorCode.InternalError, 'the guard could not check this call, so it was not run');
    }
    if (pending.settled) return;
    this.#reportUnavailable(verdict, name, 'pre');
    if (verdict.decision !== 'allow') {
      this.#settle(pending);
      this.#answerRefusal(request.id, verdict);
      return;
    }
    this.#forward(request, pending);
  }

  /** The answer to a tools/call, or the refusal that replaces it when a post control does not allow its output. */
  async #checkOutput(id: RequestId, step: StepInput, answer: JSONRPCMessage, output: unknown): Promise<JSONRPCMessage> {
    let verdict: Verdict;
    try {
      verdict = await decide(this.o.guard, { ...step, output }, 'post', this.o);
    } catch (error) {
      this.o.report(`checking the result of tools/call ${shown(step.name)} failed: ${messageOf(error)}`);
      return { jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: 'the guard could not check the result of this call' } };
    }
    this.#reportUnavailable(verdict, step.name, 'post');
    return verdict.decision === 'allow' ? answer : refusal(id, verdict);
  }

  /**
   * A notification the server sends while a tool runs (a log line, a progress message) can
   * carry what the tool read: it is checked as output of every pending call, and withheld
   * unless each allows it.
   */
  async #checkNotification(notification: JSONRPCNotification, calls: StepInput[]): Promise<JSONRPCMessage | null> {
    const output = notification.params ?? null;
    for (const step of calls) {
      let verdict: Verdict;
      try {
        verdict = await decide(this.o.guard, { ...step, output }, 'post', this.o);
      } catch (error) {
        this.o.report(`withheld a ${shown(notification.method)} notification of the MCP server sent during tools/call ${shown(step.name)}: checking it failed: ${messageOf(error)}`);
        return null;
      }
      this.#reportUnavailable(verdict, step.name, 'post');
      if (verdict.decision !== 'allow') {
        this.o.report(`withheld a ${shown(notification.method)} notification of the MCP server sent during tools/call ${shown(step.name)}: a post control did not allow it`);
        return null;
      }
    }
    return notification;
  }

  /** The steps of the tool calls the server is running. */
  #pendingCalls(): StepInput[] {
    return [...this.#byUpstream.values()].flatMap((p) => (p.step && !p.settled ? [p.step] : []));
  }

  /** Sends what the server sent in the order it sent it, however long each check takes. */
  #inOrder(message: Promise<JSONRPCMessage | null>): void {
    this.#toClient = this.#toClient.then(() => message).then((m) => {
      if (m) this.#send(this.o.client, m, 'client');
    });
  }

  /** The model reads only that the call could not be checked; the operator reads why. */
  #reportUnavailable(verdict: Verdict, tool: string, stage: 'pre' | 'post'): void {
    if (!verdict.unavailable) return;
    this.o.report(`could not check tools/call ${shown(tool)} (${stage}), so it was refused: ${messageOf(verdict.error?.cause ?? verdict.error)}`);
  }

  /** Sends a request on under an id of the relay's own, and waits for its answer. */
  #forward(request: JSONRPCRequest, pending: Pending): void {
    const upstreamId = this.#nextUpstreamId++;
    pending.upstreamId = upstreamId;
    this.#byUpstream.set(upstreamId, pending);
    const timeout = this.o.requestTimeoutMs;
    if (timeout > 0) {
      pending.timer = setTimeout(() => {
        if (pending.settled) return;
        this.#settle(pending);
        const what = pending.clientId === null ? `${request.method} (asked by the proxy)` : `${request.method} (id ${JSON.stringify(pending.clientId)})`;
        this.o.report(`the MCP server did not answer ${what} within ${timeout / 1000}s`);
        this.#fail(pending, ErrorCode.RequestTimeout, `the MCP server did not answer ${request.method} within ${timeout / 1000}s`);
      }, timeout);
      pending.timer.unref();
    }
    this.o.server.send({ ...request, id: upstreamId }).catch((error: unknown) => {
      if (pending.settled) return;
      this.#settle(pending);
      this.o.report(`could not send ${request.method} to the MCP server: ${messageOf(error)}`);
      this.#fail(pending, ErrorCode.ConnectionClosed, `the MCP server could not be reached: ${messageOf(error)}`);
    });
  }

  /** A request of the relay itself (tools/list); rejects on an error answer, a timeout or a lost server. */
  #ownRequest(method: string, params: Record<string, unknown>): Promise<{ tools?: unknown; nextCursor?: unknown }> {
    return new Promise((resolve, reject) => {
      const own = (outcome: Outcome): void => {
        if ('result' in outcome) resolve(outcome.result);
        else reject(new Error(`${method}: ${outcome.error.message}`));
      };
      const pending: Pending = { clientId: null, method, step: null, upstreamId: null, settled: false, cancelled: false, timer: null, own };
      // The id is replaced by #forward.
      this.#forward({ jsonrpc: '2.0', id: 0, method, params }, pending);
    });
  }

  #settle(pending: Pending): void {
    pending.settled = true;
    if (pending.timer) clearTimeout(pending.timer);
    pending.timer = null;
    if (pending.clientId !== null) {
      const key = looseKeyOf(pending.clientId);
      if (this.#byClient.get(key) === pending) this.#byClient.delete(key);
    }
    if (pending.upstreamId !== null && this.#byUpstream.get(pending.upstreamId) === pending) this.#byUpstream.delete(pending.upstreamId);
  }

  #fail(pending: Pending, code: number, message: string): void {
    if (pending.own) pending.own({ error: { code, message } });
    else if (!pending.cancelled && pending.clientId !== null) this.#answerError(pending.clientId, code, message);
  }

  #all(): Set<Pending> {
    return new Set([...this.#byClient.values(), ...this.#byUpstream.values()]);
  }

  #learnServer(result: Record<string, unknown>): void {
    const info = result.serverInfo as { name?: unknown } | undefined;
    if (!this.o.serverNameFixed && typeof info?.name === 'string' && info.name !== '') this.#serverName = info.name;
    if (typeof result.protocolVersion === 'string') this.o.onProtocolVersion?.(result.protocolVersion);
  }

  #answerRefusal(id: RequestId, verdict: Verdict): void {
    this.#send(this.o.client, refusal(id, verdict), 'client');
  }

  #answerError(id: RequestId, code: number, message: string): void {
    this.#send(this.o.client, { jsonrpc: '2.0', id, error: { code, message } }, 'client');
  }

  #send(to: Transport, message: JSONRPCMessage, side: 'client' | 'server'): void {
    if (this.#closed && side === 'server') return;
    to.send(message).catch((error: unknown) => this.o.report(`could not send to the ${side}: ${messageOf(error)}`));
  }
}

/** A deny or steer, as a tool result the model reads (MCP: tool errors are results, not protocol errors). */
function refusal(id: RequestId, verdict: Verdict): JSONRPCMessage {
  return { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: verdict.message! }], isError: true } };
}
