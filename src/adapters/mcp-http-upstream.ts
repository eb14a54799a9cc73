/**
 * A streamable-HTTP MCP server behind the gateway: the MCP SDK's client transport, with
 * two differences that keep the server's own messages from being lost.
 *
 * - Messages reach the server in the order the client sent them. Each is a POST of its
 *   own, so a tools/list sent right after `notifications/initialized` could overtake it
 *   and miss the tools a server registers once initialized. A notification (or an answer)
 *   is accepted (202) before anything sent after it goes out.
 * - The server's own stream (GET) is open before `notifications/initialized` is sent. The
 *   SDK opens it only after, and a server that speaks first once initialized (a
 *   roots/list request, a tools/list_changed notification) writes to no stream: the
 *   message is dropped.
 */
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { isJSONRPCRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { fetchWithOwnSignals } from './mcp-fetch.js';

/** The SDK transport's stream opener (not public in @modelcontextprotocol/sdk 1.x). */
type OpenStream = (options: { resumptionToken?: string | undefined }) => Promise<void>;

export class HttpUpstreamTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #inner: StreamableHTTPClientTransport;
  /** Settles when every notification and answer sent so far was accepted. */
  #accepted: Promise<void> = Promise.resolve();

  constructor(url: URL, headers: Record<string, string>) {
    this.#inner = new StreamableHTTPClientTransport(url, { requestInit: { headers }, fetch: fetchWithOwnSignals() });
    this.#inner.onclose = () => this.onclose?.();
    this.#inner.onerror = (error) => this.onerror?.(error);
    this.#inner.onmessage = (message) => this.onmessage?.(message);
  }

  start(): Promise<void> {
    return this.#inner.start();
  }

  send(message: JSONRPCMessage): Promise<void> {
    const sent = this.#accepted.then(() => this.#send(message));
    if (!isJSONRPCRequest(message)) this.#accepted = sent.catch(() => undefined);
    return sent;
  }

  setProtocolVersion(version: string): void {
    this.#inner.setProtocolVersion(version);
  }

  /** Ends the session on the server (DELETE), then the connection. */
  async close(): Promise<void> {
    await this.#inner.terminateSession().catch(() => undefined);
    await this.#inner.close();
  }

  async #send(message: JSONRPCMessage): Promise<void> {
    if (!('method' in message) || message.method !== 'notifications/initialized' || isJSONRPCRequest(message)) {
      await this.#inner.send(message);
      return;
    }
    const inner = this.#inner as unknown as { _startOrAuthSse?: OpenStream };
    const open = inner._startOrAuthSse;
    if (typeof open !== 'function') {
      await this.#inner.send(message);
      return;
    }
    // A server without a stream of its own answers 405, which the SDK takes as "none".
    await open.call(this.#inner, { resumptionToken: undefined }).catch(() => undefined);
    // The SDK opens the stream again once the notification is accepted: that one is skipped.
    let skip = true;
    inner._startOrAuthSse = (options) => {
      if (skip && options.resumptionToken === undefined) {
        skip = false;
        return Promise.resolve();
      }
      return open.call(this.#inner, options);
    };
    try {
      await this.#inner.send(message);
    } finally {
      inner._startOrAuthSse = open;
    }
  }
}
