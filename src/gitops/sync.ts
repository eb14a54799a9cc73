/** The server-facing steps of plan and apply, shared by the CLI and the benchmark. */
import type { GuardClient } from '../client/index.js';
import { applyOperations, type ApplyResult, type ProgressEvent } from './apply.js';
import { desiredStateOf, type ActualState } from './desired-state.js';
import { fetchActualState } from './fetch-state.js';
import { fingerprintOf } from './fingerprint.js';
import { HttpTarget } from './http-target.js';
import type { LoadResult } from './load.js';
import { plan, type Plan, type PlanOptions } from './plan.js';
import { promotionsOf, withPromotionFigures, type Promotion } from './promotions.js';

/** Requests in flight during apply: hides round trips without crowding the server. */
export const APPLY_CONCURRENCY = 8;

export interface ServerPlan {
  plan: Plan;
  actual: ActualState;
  fingerprint: string;
  /** Controls the plan moves from shadow to enforce, with the server's figures. */
  promotions: Promotion[];
}

/** `figures: false` (apply) skips asking for the promotions' shadow figures. */
export async function planAgainstServer(
  client: GuardClient,
  loaded: Pick<LoadResult, 'controls' | 'agents'>,
  options: PlanOptions,
  { figures = true }: { figures?: boolean } = {},
): Promise<ServerPlan> {
  const actual = await fetchActualState(client);
  const made = plan(desiredStateOf(loaded), actual, options);
  const found = promotionsOf(made, actual);
  const promotions = figures ? await withPromotionFigures(client, found) : found;
  return { plan: made, actual, fingerprint: fingerprintOf(actual), promotions };
}

export async function applyToServer(
  client: GuardClient,
  serverPlan: Pick<ServerPlan, 'plan' | 'actual'>,
  onProgress?: (event: ProgressEvent) => void,
  concurrency = APPLY_CONCURRENCY,
): Promise<ApplyResult & { writes: number }> {
  const target = new HttpTarget(client, serverPlan.actual);
  const result = await applyOperations(serverPlan.plan.operations, target, { ...(onProgress ? { onProgress } : {}), concurrency });
  return { ...result, writes: target.counter.writes };
}
