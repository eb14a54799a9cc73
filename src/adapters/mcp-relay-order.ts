/**
 * What the MCP server sends reaches the client in the order the server sent it, however
 * long the check of each message takes (an answer checked post, a notification checked as
 * the output of the pending calls, a message passed as it is).
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export class InOrder {
  #last: Promise<void> = Promise.resolve();

  constructor(private readonly send: (message: JSONRPCMessage) => void) {}

  /** Sends the message once every earlier one was sent; null: withheld. */
  push(message: Promise<JSONRPCMessage | null>): void {
    this.#last = this.#last.then(() => message).then((m) => {
      if (m) this.send(m);
    });
  }
}
