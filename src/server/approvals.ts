/**
 * The server's approval parts in one place (docs/approvals.md): the gate the evaluation
 * route asks, the waiters of long-polls, and what each event reaches (the live stream,
 * waiting requests, the webhook for new questions).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { ApprovalRecord } from '../model/index.js';
import type { Observability } from '../observability/index.js';
import { stepRedactor } from '../recording/value-masks.js';
import type { Store } from '../store/types.js';
import { ApprovalGate, type ApprovalEventKind } from './approval-gate.js';
import { ApprovalWaiters } from './approval-waiters.js';
import { ApprovalWebhook } from './approval-webhook.js';
import type { ServerConfig } from './config.js';

export class Approvals {
  readonly gate: ApprovalGate;
  readonly waiters: ApprovalWaiters;
  readonly #webhook: ApprovalWebhook | null;
  readonly #observability: Observability | undefined;

  constructor(store: Store, config: ServerConfig, observability: Observability | undefined, log: FastifyBaseLogger, now: () => number = Date.now) {
    this.#observability = observability;
    this.waiters = new ApprovalWaiters(store, config.approvalPollMs, now);
    this.#webhook = config.approvalWebhookUrl
      ? new ApprovalWebhook({ url: config.approvalWebhookUrl, metrics: observability?.metrics, onError: (message) => log.warn(message) })
      : null;
    this.gate = new ApprovalGate(store, stepRedactor(config.recordRedact), (kind, approval) => this.announce(kind, approval), now);
  }

  /** Tells everyone who listens: the stream, the waiters of a decided approval, the webhook of a new one. */
  announce(kind: ApprovalEventKind, approval: ApprovalRecord): void {
    this.#observability?.hub.publishApproval({ timestamp: new Date().toISOString(), event: kind, approval });
    this.waiters.notify(approval);
    if (kind === 'asked') this.#webhook?.post(approval);
  }

  async close(): Promise<void> {
    this.waiters.close();
    await this.#webhook?.close();
  }
}
