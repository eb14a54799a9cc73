/**
 * A control whose selector finds nothing in a step it is scoped to cannot check it (a
 * tool argument named `sql` where the control reads `input.query`): the step goes on as
 * if it had been checked. The SDK says so once per control, so the mistake shows in the
 * agent's own log and not only in the server's metrics.
 */
import type { ControlRecord, EvaluationResult, Stage } from '../model/index.js';
import type { GuardLogger } from './agent.js';

export class MissingSelectorWarnings {
  readonly #warned = new Set<number>();

  constructor(private readonly logger: GuardLogger) {}

  /** Warns about each control of the result that found nothing, the first time it does. */
  note(result: EvaluationResult, stepName: string, stage: Stage, records: readonly ControlRecord[]): void {
    const list = result.non_matches;
    for (let i = 0; i < list.length; i++) {
      const m = list[i]!;
      if (m.selector_missing !== true || this.#warned.has(m.control_id)) continue;
      this.#warned.add(m.control_id);
      const path = records.find((r) => r.control_id === m.control_id)?.data?.selector?.path;
      this.logger.warn(
        `control "${m.control_name}" found nothing${path ? ` at ${path}` : ''} in step "${stepName}" (${stage}), so it ` +
          `could not check it; fix the selector path, the step's input (control(fn, {input})) or the control's scope`,
      );
    }
  }
}
