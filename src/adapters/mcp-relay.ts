/**
 * The MCP gateway's message relay. JSON-RPC messages pass between the client's transport
 * and the server's (initialize, lists, notifications, progress, cancellation, the server's
 * own requests) except the steps of mcp-steps.ts (`tools/call`, `resources/read`,
 * `prompts/get`, and `tasks/result` as the output of a task's call): each is checked
 * before it reaches the server and its answer before it reaches the client, and a deny or
 * steer answers it with the verdict's text.
 *
 * What a client cannot do through it (docs/security.md, "The MCP gateway"):
 * - call a tool under a name the server did not declare exactly (mcp-tools.ts);
 * - send a checked request the gateway cannot answer after checking: as a notification (no
 *   id) or under another spelling of the method;
 * - fetch a task's result (`tasks/result`) unchecked: only tasks started by a checked
 *   tools/call of this relay are fetched, and their result is checked as that call's output;
 * - have an answer taken for another request's: the server sees ids of the relay's own
 *   (a counter), never the client's, so a reused, retyped ("1" and 1) or timed-out id
 *   cannot pair an unchecked request with a tool's result; a request whose id is already
 *   pending is refused.
 *
 * Every forwarded request is tracked until answered: a server that exits, hangs or garbles its output leaves none unanswered.
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
import { CHECKED_METHODS, isCheckedMethodMisspelt, refusal, stepOf, stepText, taskIdOf, toolError } from './mcp-steps.js';
import { newPending, PendingTable, type Outcome, type Pending } from './mcp-pending.js';
import { folded, messageOf, shown } from './mcp-text.js';
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
  /** The client's session (HTTP face): every check of this relay belongs to it. */
  sessionId?: (() => string | undefined) | undefined;
  pins?: ConstructorParameters<typeof UpstreamTools>[1]; // the pinned document's rules (mcp-pins.ts): what tools/list answers and tools/call refuses
  /** The server's protocol version, once initialize is answered (the HTTP transport sends it as a header). */
  onProtocolVersion?(version: string): void;
}

export class McpRelay {
  readonly #pending = new PendingTable();
  readonly #tools: UpstreamTools;
  readonly #tasks = new Map<string, StepInput>(); // started by checked tools/calls: their result is checked as the call's output
  #serverName: string;
  #closed = false;
  #toClient: Promise<void> = Promise.resolve();

  constructor(private readonly o: RelayOptions) {
    this.#serverName = o.serverName;
    this.#tools = new UpstreamTools((cursor) => this.#ownRequest('tools/list', cursor === undefined ? {} : { cursor }), o.pins);
  }

  get serverName(): string {
    return this.#serverName;
  }

  /** Requests forwarded (or being checked) and not yet answered. */
  get pendingCount(): number {
    return this.#pending.all().size;
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
      const pending = this.#pending.ofUpstream(id);
      if (!pending) {
        this.o.report(`dropped an answer of the MCP server to request ${JSON.stringify(id)}, which is not pending (answered already, timed out or cancelled)`);
        return;
      }
      this.#pending.settle(pending);
      if (pending.own) {
        pending.own(isJSONRPCResultResponse(message) ? { result: message.result } : { error: message.error });
        return;
      }
      const clientId = pending.clientId!;
      const answer = this.#tools.answer({ ...message, id: clientId }, pending.method);
      if (isJSONRPCResultResponse(message) && pending.method === 'initialize') this.#learnServer(message.result);
      // An error answer is the call's output as much as a result is: its message and data can carry what the tool read.
      const output = isJSONRPCResultResponse(message) ? message.result : message.error;
      const taskId = pending.task && isJSONRPCResultResponse(message) ? taskIdOf(message.result) : null;
      // A started task carries no output yet: the output is checked when tasks/result fetches it.
      if (taskId !== null && pending.step) this.#rememberTask(taskId, pending.step);
      this.#inOrder(pending.step && taskId === null ? this.#checkOutput(clientId, pending.step, answer, output) : Promise.resolve(answer));
      return;
    }
    if (isJSONRPCNotification(message) && message.method === 'notifications/tools/list_changed') this.#tools.invalidate();
    if (isJSONRPCNotification(message) && message.method === 'notifications/progress') this.#progressed(message.params?.progressToken);
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
    for (const pending of this.#pending.all()) {
      this.#pending.settle(pending);
      this.#fail(pending, code, message);
    }
  }

  close(): void {
    this.#closed = true;
    for (const pending of this.#pending.all()) if (pending.timer) clearTimeout(pending.timer);
  }

  #request(request: JSONRPCRequest): void {
    if (this.#pending.ofClient(request.id)) {
      this.o.report(`refused ${request.method} (id ${JSON.stringify(request.id)}): a request with that id is already pending`);
      this.#answerError(request.id, ErrorCode.InvalidRequest, `request id ${JSON.stringify(request.id)} is already pending: give each request an id of its own`);
      return;
    }
    if (isCheckedMethodMisspelt(request.method)) {
      const exact = [...CHECKED_METHODS].find((m) => m === folded(request.method))!;
      this.o.report(`refused a request of method ${shown(request.method)}: it is relayed only as "${exact}", exactly`);
      this.#answerError(request.id, ErrorCode.MethodNotFound, `method ${shown(request.method)} is not relayed: write "${exact}", exactly`);
      return;
    }
    const pending = newPending(request.id, request.method, (request.params?._meta as { progressToken?: unknown } | undefined)?.progressToken);
    this.#pending.add(pending);
    if (request.method === 'tasks/result') this.#taskResult(request, pending);
    else if (CHECKED_METHODS.has(request.method)) void this.#checked(request, pending);
    else this.#forward(request, pending);
  }

  #notification(notification: JSONRPCNotification): void {
    if (notification.method === 'notifications/cancelled') {
      const id = (notification.params as { requestId?: RequestId } | undefined)?.requestId;
      const pending = id === undefined || id === null ? undefined : this.#pending.ofClient(id);
      // A cancelled request gets no answer (MCP): stop waiting for one, and tell the server under its id.
      if (pending && pending.clientId === id) {
        pending.cancelled = true;
        this.#pending.settle(pending);
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

  /** A request that is a step (mcp-steps.ts): checked pre, then forwarded; its answer is checked post. */
  async #checked(request: JSONRPCRequest, pending: Pending): Promise<void> {
    const refuse = (code: number, message: string): void => {
      this.#pending.settle(pending);
      this.#answerError(request.id, code, message);
    };
    const made = stepOf(request.method, request.params, this.#serverName);
    if (!made.ok) {
      if (made.report !== undefined) this.o.report(`refused ${request.method}: ${made.report}`);
      return refuse(made.code, made.message);
    }
    const { step } = made;
    const what = `${request.method} ${shown(step.name)}`;
    if (step.type === 'tool') {
      let refused: { report: string; text: string } | null;
      try {
        refused = await this.#tools.refusalOf(step.name); // not declared, or (pinned server) changed, unpinned or hidden
      } catch (error) {
        if (pending.settled) return;
        this.o.report(`could not read the MCP server's tools (tools/list), so ${what} was refused: ${messageOf(error)}`);
        return refuse(ErrorCode.InternalError, "the gateway could not read the MCP server's tools, so the call was not run");
      }
      if (pending.settled) return;
      if (refused !== null) {
        this.o.report(`refused ${what}: ${refused.report}`);
        this.#pending.settle(pending);
        return this.#send(this.o.client, toolError(request.id, refused.text), 'client');
      }
    }
    pending.step = step;
    pending.task = made.task;
    let verdict: Verdict;
    try {
      verdict = await this.#decide(step, 'pre');
    } catch (error) {
      if (pending.settled) return;
      this.o.report(`checking ${what} failed: ${messageOf(error)}`);
      return refuse(ErrorCode.InternalError, `the guard could not check this ${request.method}, so it was not run`);
    }
    if (pending.settled) return;
    this.#reportUnavailable(verdict, step, 'pre');
    if (verdict.decision !== 'allow') {
      this.#pending.settle(pending);
      this.#send(this.o.client, refusal(request.id, step.type, verdict), 'client');
      return;
    }
    this.#forward(request, pending);
  }

  /**
   * tasks/result answers with what a task-augmented tools/call produced, so it is relayed
   * only for a task this relay started (and knows the step of), and checked as its output.
   */
  #taskResult(request: JSONRPCRequest, pending: Pending): void {
    const taskId = request.params?.taskId;
    const step = typeof taskId === 'string' ? this.#tasks.get(taskId) : undefined;
    if (!step) {
      this.o.report(`refused tasks/result for task ${JSON.stringify(taskId)}: not a task started through this gateway, so its result could not be checked`);
      this.#pending.settle(pending);
      this.#answerError(request.id, ErrorCode.InvalidParams, 'tasks/result is relayed only for a task started through this gateway (its result is checked like the call\'s)');
      return;
    }
    pending.step = step;
    this.#forward(request, pending);
  }

  /** The answer to a checked request, or the refusal that replaces it when a post control does not allow its output. */
  async #checkOutput(id: RequestId, step: StepInput, answer: JSONRPCMessage, output: unknown): Promise<JSONRPCMessage> {
    let verdict: Verdict;
    try {
      verdict = await this.#decide({ ...step, output }, 'post');
    } catch (error) {
      this.o.report(`checking the answer to ${stepText(step)} failed: ${messageOf(error)}`);
      return { jsonrpc: '2.0', id, error: { code: ErrorCode.InternalError, message: 'the guard could not check the answer to this request' } };
    }
    this.#reportUnavailable(verdict, step, 'post');
    return verdict.decision === 'allow' ? answer : refusal(id, step.type, verdict);
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
        verdict = await this.#decide({ ...step, output }, 'post');
      } catch (error) {
        this.o.report(`withheld a ${shown(notification.method)} notification of the MCP server sent during ${stepText(step)}: checking it failed: ${messageOf(error)}`);
        return null;
      }
      this.#reportUnavailable(verdict, step, 'post');
      if (verdict.decision !== 'allow') {
        this.o.report(`withheld a ${shown(notification.method)} notification of the MCP server sent during ${stepText(step)}: a post control did not allow it`);
        return null;
      }
    }
    return notification;
  }

  /** The steps the server is working on (tool calls, reads, prompts). */
  #pendingCalls(): StepInput[] {
    return [...this.#pending.forwardedRequests()].flatMap((p) => (p.step && !p.settled ? [p.step] : []));
  }

  /** Every check of the relay: the step, as part of the client's session. */
  #decide(step: StepInput, stage: 'pre' | 'post'): Promise<Verdict> {
    return decide(this.o.guard, step, stage, this.o, this.o.sessionId?.());
  }

  /** Sends what the server sent in the order it sent it, however long each check takes. */
  #inOrder(message: Promise<JSONRPCMessage | null>): void {
    this.#toClient = this.#toClient.then(() => message).then((m) => {
      if (m) this.#send(this.o.client, m, 'client');
    });
  }

  /** The model reads only that the call could not be checked; the operator reads why. */
  #reportUnavailable(verdict: Verdict, step: StepInput, stage: 'pre' | 'post'): void {
    if (!verdict.unavailable) return;
    this.o.report(`could not check ${stepText(step)} (${stage}), so it was refused: ${messageOf(verdict.error?.cause ?? verdict.error)}`);
  }

  /** A task started by a checked call; the oldest are forgotten past a bound (their result is then refused, never unchecked). */
  #rememberTask(taskId: string, step: StepInput): void {
    this.#tasks.delete(taskId);
    this.#tasks.set(taskId, step);
    if (this.#tasks.size > MAX_TASKS) this.#tasks.delete(this.#tasks.keys().next().value!);
  }

  /** The server reports progress on a request: it is alive, so the request's timeout starts again. */
  #progressed(token: unknown): void {
    if (typeof token !== 'string' && typeof token !== 'number') return;
    for (const pending of this.#pending.forwardedRequests()) {
      if (pending.progressToken === token && pending.timer) pending.timer.refresh();
    }
  }

  /** Sends a request on under an id of the relay's own, and waits for its answer. */
  #forward(request: JSONRPCRequest, pending: Pending): void {
    const upstreamId = this.#pending.forwarded(pending);
    const timeout = this.o.requestTimeoutMs;
    if (timeout > 0) {
      // Restarted by the server's progress on the request (#progressed).
      pending.timer = setTimeout(() => {
        if (pending.settled) return;
        this.#pending.settle(pending);
        const what = pending.clientId === null ? `${request.method} (asked by the proxy)` : `${request.method} (id ${JSON.stringify(pending.clientId)})`;
        this.o.report(`the MCP server did not answer ${what} within ${timeout / 1000}s; cancelled it on the server`);
        // Otherwise the tool runs on, and may still act, after the client was told it failed.
        const reason = `the client's gateway stopped waiting after ${timeout / 1000}s`;
        this.#send(this.o.server, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: upstreamId, reason } }, 'server');
        this.#fail(pending, ErrorCode.RequestTimeout, `the MCP server did not answer ${request.method} within ${timeout / 1000}s`);
      }, timeout);
      pending.timer.unref();
    }
    this.o.server.send({ ...request, id: upstreamId }).catch((error: unknown) => {
      if (pending.settled) return;
      this.#pending.settle(pending);
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
      const pending: Pending = { ...newPending(null, method), own };
      // The id is replaced by #forward.
      this.#forward({ jsonrpc: '2.0', id: 0, method, params }, pending);
    });
  }

  #fail(pending: Pending, code: number, message: string): void {
    if (pending.own) pending.own({ error: { code, message } });
    else if (!pending.cancelled && pending.clientId !== null) this.#answerError(pending.clientId, code, message);
  }

  #learnServer(result: Record<string, unknown>): void {
    const info = result.serverInfo as { name?: unknown } | undefined;
    if (!this.o.serverNameFixed && typeof info?.name === 'string' && info.name !== '') this.#serverName = info.name;
    if (typeof result.protocolVersion === 'string') this.o.onProtocolVersion?.(result.protocolVersion);
  }

  #answerError(id: RequestId, code: number, message: string): void {
    this.#send(this.o.client, { jsonrpc: '2.0', id, error: { code, message } }, 'client');
  }

  #send(to: Transport, message: JSONRPCMessage, side: 'client' | 'server'): void {
    if (this.#closed && side === 'server') return;
    to.send(message).catch((error: unknown) => this.o.report(`could not send to the ${side}: ${messageOf(error)}`));
  }
}

/** Tasks whose result a client may still fetch; a client starting more loses the oldest. */
const MAX_TASKS = 10_000;
