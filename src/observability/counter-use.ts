/**
 * What rate and budget controls have used of their limits: per control and key for stats
 * and the dashboard, and per control (the most used key) for /metrics as
 * `guard_budget_used_ratio{control}`. No per-key label: keys are unbounded.
 */
import { Gauge } from 'prom-client';
import type { CounterUsage } from '../counting/index.js';
import { maskMatch } from '../evaluators/mask.js';
import type { GuardMetrics } from './metrics.js';

/** One key's use as stats and the dashboard show it. */
export interface CounterUse {
  control_id: number;
  control_name: string;
  /** The control id, plus the leaf's place for a condition tree. */
  counter: string;
  /**
   * The key, masked as matches are (`jane….com`; `…` under 8 characters): keys are often
   * user ids or e-mail addresses, which stats must not repeat. Two keys may look alike.
   */
  key: string;
  kind: CounterUsage['kind'];
  window_ms: number;
  used: number;
  limit: number;
  /** used / limit; above 1 for a rate control refusing steps. */
  ratio: number;
}

export interface CounterUseSource {
  usage(): Promise<CounterUsage[]>;
}

/** Most keys a stats answer lists, the most used first. */
export const MAX_LISTED_KEYS = 500;

export async function counterUseOf(
  source: CounterUseSource,
  names: (controlId: number) => Promise<string | undefined>,
  filter: { control_id?: number } = {},
): Promise<CounterUse[]> {
  const rows = (await source.usage()).filter((u) => filter.control_id === undefined || u.control_id === filter.control_id);
  rows.sort((a, b) => b.used / b.max - a.used / a.max);
  const out: CounterUse[] = [];
  for (const u of rows.slice(0, MAX_LISTED_KEYS)) {
    out.push({
      control_id: u.control_id,
      control_name: (await names(u.control_id)) ?? String(u.control_id),
      counter: u.counter,
      key: maskMatch(u.key),
      kind: u.kind,
      window_ms: u.window_ms,
      used: u.used,
      limit: u.max,
      ratio: u.max > 0 ? u.used / u.max : 0,
    });
  }
  return out;
}

/** Registers `<prefix>_budget_used_ratio{control}`: per control, its most used key's ratio. */
export function registerCounterMetrics(
  metrics: GuardMetrics,
  source: CounterUseSource,
  names: (controlId: number) => Promise<string | undefined>,
): Gauge<'control'> {
  return new Gauge({
    name: `${metrics.prefix}_budget_used_ratio`,
    help: 'Per rate or budget control, the use of its most used key against the limit (1 = at the limit)',
    labelNames: ['control'] as const,
    registers: [metrics.registry],
    async collect() {
      this.reset();
      let rows: CounterUsage[];
      try {
        rows = await source.usage();
      } catch {
        // The database is away: the gauge says nothing rather than breaking the scrape.
        return;
      }
      const top = new Map<number, number>();
      for (const u of rows) top.set(u.control_id, Math.max(top.get(u.control_id) ?? 0, u.max > 0 ? u.used / u.max : 0));
      for (const [id, ratio] of top) {
        const name = (await names(id)) ?? String(id);
        this.set({ control: metrics.controlLabels.value(name) }, ratio);
      }
    },
  });
}
