/**
 * Promotions: controls a plan moves from `mode: shadow` to enforce. A plan that turns a
 * rule on says what it would have done on live traffic, with the server's own figures
 * for the time the control ran in shadow mode (docs/gitops.md, shadow-first rollout).
 */
import type { ControlStatsResult, GuardClient } from '../client/index.js';
import { ApiError } from '../errors.js';
import type { Decision } from '../model/index.js';
import type { ActualState } from './desired-state.js';
import { mapLimit } from './fetch-state.js';
import type { Plan } from './plan.js';

/** The window the figures cover: the server's stats range. */
export const PROMOTION_TIME_RANGE = '24h';
const PROMOTION_WINDOW_TEXT = 'in the last 24 h';

export interface PromotionFigures {
  time_range: typeof PROMOTION_TIME_RANGE;
  /** Steps the control evaluated while in shadow mode. */
  evaluated: number;
  /** Of those, the ones it matched (any action), would-deny and would-steer. */
  matched: number;
  would_deny: number;
  would_steer: number;
}

export interface Promotion {
  name: string;
  control_id: number;
  /** What the control does once enforced. */
  decision: Decision;
  /** The server's figures; null when it could not give them (`unavailable` says why). */
  figures: PromotionFigures | null;
  unavailable?: string;
}

/** The controls a plan promotes from shadow to enforce, without figures yet. PURE. */
export function promotionsOf(p: Pick<Plan, 'operations'>, actual: Pick<ActualState, 'controls'>): Promotion[] {
  const ids = new Map(actual.controls.map((c) => [c.name, c.control_id]));
  const out: Promotion[] = [];
  for (const o of p.operations) {
    if (o.op !== 'update_control') continue;
    const mode = o.changes.find((c) => c.path === 'mode');
    const id = ids.get(o.name);
    if (!mode || mode.before !== 'shadow' || mode.after === 'shadow' || id === undefined) continue;
    out.push({ name: o.name, control_id: id, decision: o.data.action.decision, figures: null });
  }
  return out;
}

/** How many stats requests run at once. */
const STATS_CONCURRENCY = 4;

/**
 * Asks the server for each promotion's figures. A server without observability (404) or
 * one that does not count shadow evaluations leaves the figures out and says so; other
 * failures (no key, server down) are raised like the rest of the plan's requests.
 */
export async function withPromotionFigures(client: Pick<GuardClient, 'controlStats'>, promotions: readonly Promotion[]): Promise<Promotion[]> {
  return mapLimit(promotions, STATS_CONCURRENCY, async (promotion) => {
    let answer: ControlStatsResult;
    try {
      answer = await client.controlStats(promotion.control_id, { time_range: PROMOTION_TIME_RANGE });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        // No such route: observability is off. Otherwise the control went away since the plan read it.
        const noRoute = error.problem?.detail?.startsWith('no route') ?? true;
        return { ...promotion, unavailable: noRoute ? 'the server keeps no observability data (OBSERVABILITY_ENABLED is off)' : 'the server no longer has this control' };
      }
      throw error;
    }
    const s = answer.stats;
    if (s.shadow_executions === undefined || s.would_deny === undefined || s.would_steer === undefined) {
      return { ...promotion, unavailable: 'the server does not report shadow figures' };
    }
    const figures: PromotionFigures = {
      time_range: PROMOTION_TIME_RANGE,
      evaluated: s.shadow_executions,
      matched: s.shadow_matches ?? 0,
      would_deny: s.would_deny,
      would_steer: s.would_steer,
    };
    return { ...promotion, figures };
  });
}

const count = (n: number): string => n.toLocaleString('en-US');

/** "would have denied 37 of 10,412 steps in the last 24 h", or why there is no figure. PURE. */
export function promotionEffect(promotion: Promotion): string {
  const f = promotion.figures;
  if (f === null) return `no figures: ${promotion.unavailable ?? 'not asked'}`;
  if (f.evaluated === 0) return `no steps evaluated in shadow mode ${PROMOTION_WINDOW_TEXT}`;
  const of = `of ${count(f.evaluated)} step${f.evaluated === 1 ? '' : 's'} ${PROMOTION_WINDOW_TEXT}`;
  switch (promotion.decision) {
    case 'deny':
      return `would have denied ${count(f.would_deny)} ${of}`;
    case 'steer':
      return `would have steered ${count(f.would_steer)} ${of}`;
    case 'ask':
      return `would have asked for approval of ${count(f.matched)} ${of}`;
    case 'allow':
    case 'warn':
    case 'log':
      return `would have matched ${count(f.matched)} ${of}`;
  }
}

/** The one-line form: `~ block-pii: mode shadow -> enforce (would have denied 37 of 10,412 steps in the last 24 h)`. */
export function promotionLine(promotion: Promotion): string {
  return `~ ${promotion.name}: mode shadow -> enforce (${promotionEffect(promotion)})`;
}
