/**
 * The MCP gateway's requests in flight: known by the client's id until answered, and by
 * the id of the relay's own that the server sees once forwarded. The server never sees a
 * client's id, so no answer can be paired with another request than the one it answers.
 */
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { StepInput } from '../sdk/agent.js';
import { looseKeyOf } from './mcp-text.js';

export type Outcome = { result: Record<string, unknown> } | { error: { code: number; message: string } };

export interface Pending {
  /** The client's id; null for the relay's own requests. */
  clientId: RequestId | null;
  method: string;
  /** Set for checked requests: the step whose answer is checked post. */
  step: StepInput | null;
  /** A task-augmented tools/call: its answer names the task whose result tasks/result fetches. */
  task: boolean;
  /** `_meta.progressToken` of the request: the server's progress on it restarts the timeout. */
  progressToken: string | number | null;
  /** The id the server sees, once forwarded. */
  upstreamId: number | null;
  settled: boolean;
  cancelled: boolean;
  timer: NodeJS.Timeout | null;
  /** The relay's own request: the answer goes here, not to the client. */
  own?: (outcome: Outcome) => void;
}

export function newPending(clientId: RequestId | null, method: string, progressToken: unknown = null): Pending {
  return {
    clientId, method, step: null, task: false, upstreamId: null, settled: false, cancelled: false, timer: null,
    progressToken: typeof progressToken === 'string' || typeof progressToken === 'number' ? progressToken : null,
  };
}

export class PendingTable {
  readonly #byClient = new Map<string, Pending>();
  readonly #byUpstream = new Map<number, Pending>();
  #nextUpstreamId = 1;

  /** The pending request of a client id, or one a lenient peer could take for it (mcp-text.ts). */
  ofClient(id: RequestId): Pending | undefined {
    return this.#byClient.get(looseKeyOf(id));
  }

  /** The client's requests not yet answered (being checked or forwarded). */
  get clientCount(): number {
    return this.#byClient.size;
  }

  ofUpstream(id: unknown): Pending | undefined {
    return typeof id === 'number' ? this.#byUpstream.get(id) : undefined;
  }

  add(pending: Pending): void {
    if (pending.clientId !== null) this.#byClient.set(looseKeyOf(pending.clientId), pending);
  }

  /** Gives a request the id the server will see. */
  forwarded(pending: Pending): number {
    const upstreamId = this.#nextUpstreamId++;
    pending.upstreamId = upstreamId;
    this.#byUpstream.set(upstreamId, pending);
    return upstreamId;
  }

  /** Answered, failed or cancelled: forgotten, its timer stopped. */
  settle(pending: Pending): void {
    pending.settled = true;
    if (pending.timer) clearTimeout(pending.timer);
    pending.timer = null;
    if (pending.clientId !== null) {
      const key = looseKeyOf(pending.clientId);
      if (this.#byClient.get(key) === pending) this.#byClient.delete(key);
    }
    if (pending.upstreamId !== null && this.#byUpstream.get(pending.upstreamId) === pending) this.#byUpstream.delete(pending.upstreamId);
  }

  /** What the server is working on. */
  forwardedRequests(): IterableIterator<Pending> {
    return this.#byUpstream.values();
  }

  all(): Set<Pending> {
    return new Set([...this.#byClient.values(), ...this.#byUpstream.values()]);
  }
}
