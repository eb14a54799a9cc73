import type { GuardMetrics } from './metrics.js';

/** What the reporter needs to know of one control that found nothing. */
export interface MissingSelection {
  agent_name: string;
  step_name: string;
  control_id: number;
  control_name: string;
  selector_path: string | null;
}

export interface SelectorMissingLogger {
  warn(obj: object, msg?: string): void;
}

/** Distinct controls warned about at most; past it the metric still counts, silently. */
const MAX_WARNED = 10_000;

/**
 * A control whose selector finds nothing cannot check the step: a deny rule then lets
 * everything through without anyone noticing. Each such step is counted in
 * `selector_missing_total`, and the first one of each control (and selector) is logged.
 */
export class SelectorMissingReporter {
  readonly #warned = new Set<string>();

  constructor(
    private readonly metrics: GuardMetrics,
    private readonly logger: SelectorMissingLogger | undefined,
  ) {}

  report(m: MissingSelection): void {
    this.metrics.selectorMissing.child(this.metrics.agentLabels.value(m.agent_name), this.metrics.controlLabels.value(m.control_name)).inc();
    const key = `${m.control_id}\0${m.selector_path ?? ''}`;
    if (this.#warned.has(key) || this.#warned.size >= MAX_WARNED) return;
    this.#warned.add(key);
    this.logger?.warn(
      { control_id: m.control_id, control_name: m.control_name, selector_path: m.selector_path, agent_name: m.agent_name, step_name: m.step_name },
      `control "${m.control_name}" found nothing${m.selector_path ? ` at ${m.selector_path}` : ''} in step "${m.step_name}" of agent ` +
        `"${m.agent_name}", so it could not check it; fix the selector path or narrow the control's scope (warned once per control)`,
    );
  }
}

/** Distinct agents warned about at most; past it the metric still counts, silently. */
const MAX_WARNED_AGENTS = 10_000;

/**
 * An agent evaluated with no control in force gets every step allowed: most often a
 * misspelt name that registered a new, empty agent. Each such evaluation is counted in
 * `unguarded_evaluations_total`, and the first one of each agent is logged.
 */
export class UnguardedReporter {
  readonly #warned = new Set<string>();

  constructor(
    private readonly metrics: GuardMetrics,
    private readonly logger: SelectorMissingLogger | undefined,
  ) {}

  report(agentName: string): void {
    this.metrics.unguardedEvaluations.child(this.metrics.agentLabels.value(agentName)).inc();
    if (this.#warned.has(agentName) || this.#warned.size >= MAX_WARNED_AGENTS) return;
    this.#warned.add(agentName);
    this.logger?.warn(
      { agent_name: agentName },
      `agent "${agentName}" was evaluated with no controls: every step it sends is allowed unchecked. ` +
        'Link controls to it, or check the agent name its clients use (a misspelt name registers a new agent).',
    );
  }
}
