/**
 * The MCP gateway's message relay. JSON-RPC messages pass between the client's transport
 * and the server's (initialize, lists, notifications, progress, cancellation, the server's
 * own requests) except the steps of mcp-steps.ts (`tools/call`, `resources/read`,
 * `prompts/get`, and `tasks/result` as the output of a task's call): each is checked
 * before it reaches the server and its answer before it reaches the client, and a deny or
 * steer answers it with the verdict's text.
 *
 * What a client cannot do through it (docs/security.md, "The MCP gateway"):
 * - call a tool, or get a prompt, under a name the server did not declare exactly (mcp-tools.ts, mcp-prompts.ts);
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
 *
 * Parts: mcp-relay-checks.ts (checks of answers and notifications), mcp-recent-steps.ts
 * (the steps the server's later messages are checked as the output of), mcp-relay-upstream.ts
 * (forwarding, timeouts, the relay's own requests), mcp-relay-tasks.ts (MCP tasks),
 * mcp-relay-order.ts (the server's messages in order).
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage, type JSONRPCNotification, type JSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';
import type { GatewayApprovalOptions } from './mcp-approval.js';
import { reportedError } from './mcp-http-request.js';
import { kindOf } from './mcp-message.js';
import { newPending, PendingTable, type Pending } from './mcp-pending.js';
import { UpstreamPrompts } from './mcp-prompts.js';
import { RecentSteps } from './mcp-recent-steps.js';
import { RelayChecks } from './mcp-relay-checks.js';
import { InOrder } from './mcp-relay-order.js';
import { RelayTasks } from './mcp-relay-tasks.js';
import { UpstreamRequests } from './mcp-relay-upstream.js';
import { CHECKED_METHODS, EXACT_METHODS, isCheckedMethodMisspelt, misnamedParameter, TASK_METHODS, refusal, stepOf, taskIdOf, toolError } from './mcp-steps.js';
import { folded, messageOf, methodText, shown, valueText } from './mcp-text.js';
import { UpstreamTools } from './mcp-tools.js';

export interface RelayOptions extends GatewayApprovalOptions {
  server: Transport;
  /** The name steps carry as `context.mcp_server` until the server's initialize answer names it. */
  serverName: string;
  /** Fixed name: the server's own name (serverInfo.name) is not used. */
  serverNameFixed: boolean;
  /** The client's session (HTTP face): every check of this relay belongs to it. */
  sessionId?: (() => string | undefined) | undefined;
  pins?: ConstructorParameters<typeof UpstreamTools>[1]; // the pinned document's rules (mcp-pins.ts): what tools/list answers and tools/call refuses
  /** The server's protocol version, once initialize is answered (the HTTP transport sends it as a header). */
  onProtocolVersion?(version: string): void;
  /** The client's requests in flight at once; past it a request is answered with an error. Default DEFAULT_MAX_PENDING. */
  maxPending?: number | undefined;
}

/**
 * Requests of one client in flight at once. Each holds a check, a timer and the server's
 * work; a client sending without waiting for answers (a loop gone wrong, or on purpose)
 * would otherwise grow all three without bound. MCP clients keep a handful in flight.
 */
export const DEFAULT_MAX_PENDING = 1000;

export class McpRelay {
  readonly #pending = new PendingTable();
  readonly #tools: UpstreamTools;
  readonly #prompts: UpstreamPrompts;
  readonly #tasks = new RelayTasks();
  /** Steps the server was sent in this session: its later messages are checked as their output too. */
  readonly #recent: RecentSteps;
  readonly #checks: RelayChecks;
  readonly #upstream: UpstreamRequests;
  readonly #toClient: InOrder;
  #serverName: string;
  #closed = false;
  #initialized = false;
  /** Refusing for too many in flight: reported once per spell, not once per request. */
  #overLimit = false;
  readonly #unsubscribePins: () => void;

  constructor(private readonly o: RelayOptions) {
    this.#serverName = o.serverName;
    this.#checks = new RelayChecks(o);
    this.#recent = new RecentSteps(o.guard);
    this.#upstream = new UpstreamRequests({
      pending: this.#pending,
      server: o.server,
      requestTimeoutMs: o.requestTimeoutMs,
      report: (line) => o.report(line),
      toServer: (message) => this.#send(o.server, message, 'server'),
      answerError: (id, code, message, quoting) => {
        const answer: JSONRPCMessage = { jsonrpc: '2.0', id, error: { code, message } };
        if (quoting?.step) this.#toClient.push(this.#checks.output(id, quoting.step, answer, { code, message }, this.#recent.others(quoting.step)));
        else if (quoting) this.#toClient.push(this.#answer(id, quoting.method, answer));
        else this.#answerError(id, code, message);
      },
    });
    this.#toClient = new InOrder((message) => this.#send(o.client, message, 'client'));
    this.#tools = new UpstreamTools((cursor) => this.#upstream.own('tools/list', cursor === undefined ? {} : { cursor }), o.pins);
    this.#prompts = new UpstreamPrompts((cursor) => this.#upstream.own('prompts/list', cursor === undefined ? {} : { cursor }));
    // A changed pinned document changes what tools/list answers: the client is told, once it is initialized.
    this.#unsubscribePins = o.pins?.onChange(() => {
      if (this.#initialized && !this.#closed) this.#toClient.push(Promise.resolve({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }));
    }) ?? (() => undefined);
  }

  get serverName(): string {
    return this.#serverName;
  }

  /** Requests forwarded (or being checked) and not yet answered. */
  get pendingCount(): number {
    return this.#pending.all().size;
  }

  fromClient(message: JSONRPCMessage): void {
    const kind = kindOf(message);
    if (kind === 'request') this.#request(this.#checks.approvals.seen(message as JSONRPCRequest));
    else if (kind === 'notification') this.#notification(message as JSONRPCNotification);
    // Only from a transport that does not validate what it reads: nothing could answer it.
    else if (kind === 'invalid') this.o.report('dropped a message of the client that is not JSON-RPC (a request id must be a string or an integer)');
    // The client's answers to the server's own requests (sampling, elicitation, roots), but to the gateway's own.
    else if (!this.#checks.approvals.answered(message)) this.#send(this.o.server, message, 'server');
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
    const kind = kindOf(message);
    if (kind === 'result' || kind === 'error') {
      const id = (message as { id?: RequestId }).id;
      const pending = this.#pending.ofUpstream(id);
      if (!pending) {
        // The id is not quoted: the server chooses it, and could write there what a tool read for the operator's log to carry.
        this.o.report('dropped an answer of the MCP server to a request that is not pending (answered already, timed out or cancelled)');
        return;
      }
      this.#pending.settle(pending);
      // An error answer is the call's output as much as a result is: its message and data can carry what the tool read.
      const result = kind === 'result' ? (message as { result: Record<string, unknown> }).result : null;
      const output = result ?? (message as { error: { code: number; message: string } }).error;
      if (pending.own) {
        pending.own(result ? { result } : { error: output as { code: number; message: string } });
        return;
      }
      const clientId = pending.clientId!;
      if (result && pending.method === 'tasks/list') {
        // Each listed task is checked as its call's output; the rest of the list as any answer.
        this.#toClient.push(this.#taskList(clientId, result).then((listed) => this.#answer(clientId, pending.method, listed)));
        return;
      }
      const answer = this.#tools.answer({ ...message, id: clientId }, pending.method);
      if (result && pending.method === 'initialize') this.#learnServer(result);
      const taskId = pending.task && result ? taskIdOf(result) : null;
      // A started task's output comes later, checked when tasks/result fetches it. The answer
      // that starts it is checked too: the server can put what the tool read beside the task or in its status message.
      if (taskId !== null && pending.step) this.#tasks.remember(taskId, pending.step);
      // Noted again once answered: the newest kept is the last one a session past the bound would forget.
      if (pending.step) this.#recent.note(pending.step);
      const step = pending.step;
      if (step) {
        this.#toClient.push(this.#checks.output(clientId, step, answer, output, this.#recent.others(step)).then((checked) => {
          // Its post controls allowed what it answered: those that read no output would allow anything it sends later.
          if (checked === answer) this.#recent.allowed(step);
          return checked;
        }));
        return;
      }
      this.#toClient.push(this.#answer(clientId, pending.method, answer));
      return;
    }
    if (kind === 'invalid') {
      this.serverGarbled(new Error('a request id must be a string or an integer'));
      return;
    }
    if (kind === 'notification') {
      const notification = message as JSONRPCNotification;
      if (notification.method === 'notifications/tools/list_changed') this.#tools.invalidate();
      if (notification.method === 'notifications/prompts/list_changed') this.#prompts.invalidate();
      if (notification.method === 'notifications/progress') this.#upstream.progressed(notification.params?.progressToken);
    }
    // The server's own requests (sampling, elicitation, roots) carry what it chooses to the
    // client's model or person as much as its notifications do: while a step runs, each is its output.
    const calls = this.#pendingCalls();
    // A task's status, sent whenever the server likes, carries a message it writes: the output of the call that started the task.
    const status = kind === 'notification' && (message as JSONRPCNotification).method === 'notifications/tasks/status' ? (message as JSONRPCNotification).params : undefined;
    const task = status === undefined ? undefined : this.#tasks.stepOf(status.taskId);
    if (task) calls.push(task);
    const answered = this.#recent.besides(calls);
    if (calls.length > 0 || answered === null || answered.length > 0) {
      const checked = this.#checks.notification(message as JSONRPCNotification | JSONRPCRequest, calls, answered);
      if (kind === 'request') void checked.then((m) => m ?? this.#withheld(message as JSONRPCRequest));
      this.#toClient.push(checked);
      return;
    }
    // What the server sends before any step was checked.
    this.#toClient.push(Promise.resolve(message));
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
      this.#upstream.fail(pending, code, message);
    }
  }

  close(): void {
    this.#closed = true;
    this.#unsubscribePins();
    for (const pending of this.#pending.all()) if (pending.timer) clearTimeout(pending.timer);
  }

  #request(request: JSONRPCRequest): void {
    if (this.#pending.ofClient(request.id)) {
      this.o.report(`refused ${methodText(request.method)} (id ${valueText(request.id)}): a request with that id is already pending`);
      this.#answerError(request.id, ErrorCode.InvalidRequest, `request id ${JSON.stringify(request.id)} is already pending: give each request an id of its own`);
      return;
    }
    if (isCheckedMethodMisspelt(request.method)) {
      const exact = [...EXACT_METHODS].find((m) => m === folded(request.method))!;
      this.o.report(`refused a request of method ${shown(request.method)}: it is relayed only as "${exact}", exactly`);
      this.#answerError(request.id, ErrorCode.MethodNotFound, `method ${shown(request.method)} is not relayed: write "${exact}", exactly`);
      return;
    }
    const misnamed = CHECKED_METHODS.has(request.method) || TASK_METHODS.has(request.method) ? misnamedParameter(request.params) : null;
    if (misnamed !== null) {
      const [key, parameter] = misnamed.map(shown);
      this.o.report(`refused ${request.method}: its parameter ${key} is not ${parameter}, which a lenient server would read it as`);
      this.#answerError(request.id, ErrorCode.InvalidParams, `${request.method} parameter ${key} is not relayed: write ${parameter}, exactly, once`);
      return;
    }
    const max = this.o.maxPending ?? DEFAULT_MAX_PENDING;
    if (this.#pending.clientCount >= max) {
      if (!this.#overLimit) this.o.report(`refusing requests: the client has ${max} in flight, the most the gateway holds (--max-pending); they are answered with an error until answers come back`);
      this.#overLimit = true;
      this.#answerError(request.id, ErrorCode.InvalidRequest, `too many requests in flight (${max}): wait for answers before sending more`);
      return;
    }
    this.#overLimit = false;
    const pending = newPending(request.id, request.method, (request.params?._meta as { progressToken?: unknown } | undefined)?.progressToken);
    this.#pending.add(pending);
    if (TASK_METHODS.has(request.method)) this.#taskRequest(request, pending);
    else if (CHECKED_METHODS.has(request.method)) void this.#checked(request, pending);
    else this.#upstream.forward(request, pending);
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
        refused = await this.#tools.refusalOf(step.name, step.input); // not declared, an argument misnamed, or (pinned server) changed, unpinned or hidden
      } catch (error) {
        if (pending.settled) return;
        this.o.report(`could not read the MCP server's tools (tools/list), so ${what} was refused: ${messageOf(error)}`);
        return refuse(ErrorCode.InternalError, "the gateway could not read the MCP server's tools, so the call was not run");
      }
      if (pending.settled) return;
      if (refused !== null) {
        this.o.report(`refused ${what}: ${refused.report}`);
        // As MCP servers answer an unknown tool: a tool error the model reads, so the gateway changes no answer.
        this.#pending.settle(pending);
        return this.#send(this.o.client, toolError(request.id, refused.text), 'client');
      }
    }
    if (step.type === 'prompt') {
      let refused: { report: string; text: string } | null;
      try {
        refused = await this.#prompts.refusalOf(step.name, step.input); // not declared, or an argument misnamed
      } catch (error) {
        if (pending.settled) return;
        this.o.report(`could not read the MCP server's prompts (prompts/list), so ${what} was refused: ${messageOf(error)}`);
        return refuse(ErrorCode.InternalError, "the gateway could not read the MCP server's prompts, so the prompt was not got");
      }
      if (pending.settled) return;
      if (refused !== null) {
        this.o.report(`refused ${what}: ${refused.report}`);
        // As MCP servers answer an unknown prompt: an invalid-params error.
        return refuse(ErrorCode.InvalidParams, refused.text);
      }
    }
    pending.step = step;
    pending.task = made.task;
    let verdict: Verdict;
    try {
      verdict = await this.#checks.decide(step, 'pre');
    } catch (error) {
      if (pending.settled) return;
      this.o.report(`checking ${what} failed: ${messageOf(error)}`);
      return refuse(ErrorCode.InternalError, `the guard could not check this ${request.method}, so it was not run`);
    }
    if (pending.settled) return;
    this.#checks.reportUnavailable(verdict, step, 'pre');
    if (verdict.decision !== 'allow') {
      this.#pending.settle(pending);
      this.#send(this.o.client, refusal(request.id, step.type, verdict), 'client');
      return;
    }
    // Noted once the server has it, not once it answers: a call cancelled or timed out still ran,
    // and the server's later messages can carry what it read as much as after an answer.
    this.#recent.note(step);
    this.#upstream.forward(request, pending);
  }

  /**
   * tasks/result answers with what a task-augmented tools/call produced, tasks/get and
   * tasks/cancel with the task's status: each is relayed only for a task this relay started
   * (and knows the step of), and its answer checked as that call's output.
   */
  #taskRequest(request: JSONRPCRequest, pending: Pending): void {
    const taskId = request.params?.taskId;
    const step = this.#tasks.stepOf(taskId);
    if (!step) {
      this.o.report(`refused ${request.method} for task ${valueText(taskId)}: not a task started through this gateway, so what it answers could not be checked`);
      this.#pending.settle(pending);
      this.#answerError(request.id, ErrorCode.InvalidParams, `${request.method} is relayed only for a task started through this gateway (its answer is checked like the call's)`);
      return;
    }
    pending.step = step;
    this.#upstream.forward(request, pending);
  }

  /**
   * A tasks/list answer holds only the tasks this relay started (a server may keep one list
   * for all its clients), and each task's status is checked as the output of its call.
   */
  async #taskList(id: RequestId, result: Record<string, unknown>): Promise<JSONRPCMessage> {
    const listed = Array.isArray(result.tasks) ? (result.tasks as unknown[]) : [];
    const mine = listed.flatMap((task) => {
      const step = this.#tasks.stepOf((task as { taskId?: unknown } | null)?.taskId);
      return step ? [{ task, step }] : [];
    });
    const answer: JSONRPCMessage = { jsonrpc: '2.0', id, result: { ...result, tasks: mine.map((m) => m.task) } };
    const checked = await Promise.all(mine.map(({ task, step }) => this.#checks.output(id, step, answer, task)));
    return checked.find((m) => m !== answer) ?? answer;
  }

  /**
   * The answer to a request that is not a step, as the client reads it (a tools/list answer as
   * the pins filter it): checked as the output of the calls the server was sent.
   */
  #answer(id: RequestId, method: string, answer: JSONRPCMessage): Promise<JSONRPCMessage> {
    const calls = this.#pendingCalls();
    const answered = this.#recent.besides(calls);
    if (calls.length === 0 && answered !== null && answered.length === 0) return Promise.resolve(answer);
    const output = 'result' in answer ? answer.result : 'error' in answer ? answer.error : null;
    return this.#checks.answer(id, method, answer, output, calls, answered);
  }

  /** The steps the server is working on (tool calls, reads, prompts). */
  #pendingCalls(): StepInput[] {
    return [...this.#pending.forwardedRequests()].flatMap((p) => (p.step && !p.settled ? [p.step] : []));
  }

  #learnServer(result: Record<string, unknown>): void {
    const info = result.serverInfo as { name?: unknown } | undefined;
    if (!this.o.serverNameFixed && typeof info?.name === 'string' && info.name !== '') this.#serverName = info.name;
    if (typeof result.protocolVersion === 'string') this.o.onProtocolVersion?.(result.protocolVersion);
    this.#initialized = true;
  }

  /** A request of the server withheld from the client: the server is answered, so that it does not wait for the client. */
  #withheld(request: JSONRPCRequest): void {
    this.#send(this.o.server, { jsonrpc: '2.0', id: request.id, error: { code: ErrorCode.InvalidRequest, message: "the client's gateway withheld this request: a post control of a call did not allow it" } }, 'server');
  }

  #answerError(id: RequestId, code: number, message: string): void {
    this.#send(this.o.client, { jsonrpc: '2.0', id, error: { code, message } }, 'client');
  }

  #send(to: Transport, message: JSONRPCMessage, side: 'client' | 'server'): void {
    if (this.#closed && side === 'server') return;
    // reportedError: an HTTP server's error page is not quoted (it could quote what a tool read).
    to.send(message).catch((error: unknown) => this.o.report(`could not send to the ${side}: ${reportedError(error)}`));
  }
}
