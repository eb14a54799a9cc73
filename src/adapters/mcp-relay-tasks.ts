/**
 * MCP tasks started through the gateway. A task-augmented tools/call answers with a task
 * id, and `tasks/result` later fetches what the call produced: that result is checked as
 * the call's output, so only tasks a checked call of this relay started are fetched.
 */
import type { StepInput } from '../sdk/agent.js';

/** Tasks whose result a client may still fetch; a client starting more loses the oldest. */
const MAX_TASKS = 10_000;

export class RelayTasks {
  readonly #steps = new Map<string, StepInput>();

  constructor(private readonly max = MAX_TASKS) {}

  /** A task started by a checked call; the oldest are forgotten past the bound (their result is then refused, never unchecked). */
  remember(taskId: string, step: StepInput): void {
    this.#steps.delete(taskId);
    this.#steps.set(taskId, step);
    if (this.#steps.size > this.max) this.#steps.delete(this.#steps.keys().next().value!);
  }

  /** The step of the call that started a task; undefined for a task this relay did not start (or forgot). */
  stepOf(taskId: unknown): StepInput | undefined {
    return typeof taskId === 'string' ? this.#steps.get(taskId) : undefined;
  }
}
