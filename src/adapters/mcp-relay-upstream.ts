/**
 * Requests the MCP gateway sends on to the server: under an id of the relay's own
 * (mcp-pending.ts), each tracked until answered, timed out (and then cancelled on the
 * server) or failed, so that none is left unanswered. Also the relay's own requests
 * (tools/list, prompts/list), whose answer goes to the relay instead of the client.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage, type JSONRPCRequest, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { newPending, type Outcome, type Pending, type PendingTable } from './mcp-pending.js';
import { reportedError } from './mcp-http-request.js';
import { messageOf, methodText } from './mcp-text.js';

export interface UpstreamRequestsOptions {
  pending: PendingTable;
  server: Transport;
  /** A forwarded request the server has not answered after this long is answered with an error; 0: never. */
  requestTimeoutMs: number;
  report(line: string): void;
  /** Sends to the server (nothing once the relay is closed). */
  toServer(message: JSONRPCMessage): void;
  /**
   * Answers a client's request with an error. `quoting`: the error's text quotes the server,
   * and is checked as the output of its step (`step`), or as the server's answer to a request
   * that is not one (checked as the output of the steps it was sent).
   */
  answerError(id: RequestId, code: number, message: string, quoting: Pick<Pending, 'step' | 'method'> | null): void;
}

export class UpstreamRequests {
  constructor(private readonly o: UpstreamRequestsOptions) {}

  /** Sends a request on under an id of the relay's own, and waits for its answer. */
  forward(request: JSONRPCRequest, pending: Pending): void {
    const upstreamId = this.o.pending.forwarded(pending);
    const timeout = this.o.requestTimeoutMs;
    if (timeout > 0) {
      // Restarted by the server's progress on the request (progressed).
      pending.timer = setTimeout(() => {
        if (pending.settled) return;
        this.o.pending.settle(pending);
        const what = pending.clientId === null ? `${request.method} (asked by the proxy)` : `${methodText(request.method)} (id ${JSON.stringify(pending.clientId)})`;
        this.o.report(`the MCP server did not answer ${what} within ${timeout / 1000}s; cancelled it on the server`);
        // Otherwise the tool runs on, and may still act, after the client was told it failed.
        const reason = `the client's gateway stopped waiting after ${timeout / 1000}s`;
        this.o.toServer({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: upstreamId, reason } });
        this.fail(pending, ErrorCode.RequestTimeout, `the MCP server did not answer ${request.method} within ${timeout / 1000}s`);
      }, timeout);
      pending.timer.unref();
    }
    this.o.server.send({ ...request, id: upstreamId }).catch((error: unknown) => {
      if (pending.settled) return;
      this.o.pending.settle(pending);
      this.o.report(`could not send ${methodText(request.method)} to the MCP server: ${reportedError(error)}`);
      // The error can quote the server (an HTTP error page written after a tool ran): it is checked as what the server sends.
      this.fail(pending, ErrorCode.ConnectionClosed, `the MCP server could not be reached: ${messageOf(error)}`, true);
    });
  }

  /** A request of the relay itself (tools/list); rejects on an error answer, a timeout or a lost server. */
  own(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const own = (outcome: Outcome): void => {
        if ('result' in outcome) resolve(outcome.result);
        // Its message is not quoted: the server writes it as it likes, and could write there what a tool read
        // (a timeout or a lost server, the gateway's own words, is reported where it happens).
        else reject(new Error(`${method} was answered with error ${Number(outcome.error.code)}`));
      };
      const pending: Pending = { ...newPending(null, method), own };
      // The id is replaced by forward.
      this.forward({ jsonrpc: '2.0', id: 0, method, params }, pending);
    });
  }

  /** The server reports progress on a request: it is alive, so the request's timeout starts again. */
  progressed(token: unknown): void {
    if (typeof token !== 'string' && typeof token !== 'number') return;
    for (const pending of this.o.pending.forwardedRequests()) {
      if (pending.progressToken === token && pending.timer) pending.timer.refresh();
    }
  }

  /**
   * Answers a request that will get no answer from the server (a cancelled one gets none at
   * all). `quotesServer`: the message quotes the server, and is checked as its answers are.
   */
  fail(pending: Pending, code: number, message: string, quotesServer = false): void {
    if (pending.own) pending.own({ error: { code, message } });
    else if (!pending.cancelled && pending.clientId !== null) this.o.answerError(pending.clientId, code, message, quotesServer ? pending : null);
  }
}
