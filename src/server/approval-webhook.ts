/**
 * GUARD_APPROVAL_WEBHOOK_URL: each new approval is posted as JSON that chat incoming
 * webhooks accept (`text`, plus the structured fields). The URL is the operator's setting
 * only: no control or request can name another address. Deliveries are retried and
 * counted (`approval_webhook_deliveries_total{result}`); the body carries the step masked
 * as the API shows it, then every string masked again for secrets and pii, so no matched
 * value leaves the server in clear.
 */
import { Counter } from 'prom-client';
import { maskSensitiveIn, maskSensitiveInJson } from '../evaluators/mask-sensitive.js';
import type { ApprovalRecord } from '../model/index.js';
import type { GuardMetrics } from '../observability/index.js';

export interface WebhookOptions {
  url: string;
  /** Delay before each retry (ms); its length is the number of retries. */
  retryDelaysMs?: readonly number[];
  /** One attempt's time limit (ms). */
  timeoutMs?: number;
  metrics?: GuardMetrics | undefined;
  onError?: (message: string) => void;
  fetch?: typeof fetch;
}

export type DeliveryResult = 'sent' | 'retried' | 'failed';

/** The body posted for a new approval. */
export function webhookBodyOf(approval: ApprovalRecord): Record<string, unknown> {
  const step = maskSensitiveInJson(approval.step);
  const text =
    `Approval needed: agent ${approval.agent_name} wants to run ${approval.step_type} "${approval.step_name}" (${approval.stage}); ` +
    `control "${approval.control_name}" asks a person. Approve or deny before ${approval.expires_at}: ` +
    `guardctl approvals approve ${approval.id} (or deny ${approval.id} --reason ...).`;
  return {
    text: maskSensitiveIn(text),
    approval_id: approval.id,
    status: approval.status,
    agent_name: maskSensitiveIn(approval.agent_name),
    control_name: approval.control_name,
    stage: approval.stage,
    step_type: approval.step_type,
    step_name: maskSensitiveIn(approval.step_name),
    step,
    created_at: approval.created_at,
    expires_at: approval.expires_at,
  };
}

export class ApprovalWebhook {
  readonly #options: Required<Omit<WebhookOptions, 'metrics' | 'onError'>> & Pick<WebhookOptions, 'onError'>;
  readonly #counter: Counter<'result'> | null;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #timers = new Map<NodeJS.Timeout, () => void>();
  #closed = false;

  constructor(options: WebhookOptions) {
    this.#options = { retryDelaysMs: [250, 1000, 5000], timeoutMs: 5000, fetch, ...options };
    this.#counter = options.metrics
      ? new Counter({
          name: `${options.metrics.prefix}_approval_webhook_deliveries_total`,
          help: 'Posts of new approvals to GUARD_APPROVAL_WEBHOOK_URL: sent (first try), retried (an attempt that failed and will be tried again), failed (given up)',
          labelNames: ['result'] as const,
          registers: [options.metrics.registry],
        })
      : null;
  }

  /** Posts in the background; never throws, never delays the answer that asked. */
  post(approval: ApprovalRecord): void {
    if (this.#closed) return;
    const run = this.#deliver(JSON.stringify(webhookBodyOf(approval))).finally(() => this.#inFlight.delete(run));
    this.#inFlight.add(run);
  }

  async #deliver(body: string): Promise<void> {
    const { retryDelaysMs, url } = this.#options;
    for (let attempt = 0; ; attempt++) {
      const problem = await this.#attempt(body);
      if (problem === null) {
        this.#count('sent');
        return;
      }
      if (attempt >= retryDelaysMs.length || this.#closed) {
        this.#count('failed');
        // The URL holds the chat's secret: the message names the host only.
        this.#options.onError?.(`approval webhook to ${new URL(url).host} failed after ${attempt + 1} attempts: ${problem}`);
        return;
      }
      this.#count('retried');
      await this.#sleep(retryDelaysMs[attempt]!);
    }
  }

  async #attempt(body: string): Promise<string | null> {
    try {
      const response = await this.#options.fetch(this.#options.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        // Never follow a redirect: the operator named this address, not where it points next.
        redirect: 'manual',
        signal: AbortSignal.timeout(this.#options.timeoutMs),
      });
      await response.arrayBuffer().catch(() => undefined);
      return response.status >= 200 && response.status < 300 ? null : `HTTP ${response.status}`;
    } catch (error) {
      return error instanceof Error ? error.name : 'error';
    }
  }

  #count(result: DeliveryResult): void {
    this.#counter?.inc({ result });
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        resolve();
      }, ms);
      this.#timers.set(timer, resolve);
    });
  }

  /** Waits for deliveries under way (their retries are cut short). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const [timer, wake] of this.#timers) {
      clearTimeout(timer);
      wake();
    }
    this.#timers.clear();
    await Promise.allSettled([...this.#inFlight]);
  }
}
