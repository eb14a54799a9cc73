/**
 * PURE: deletes the server will refuse. A control some policy binds cannot be deleted
 * (409 bound_by_policy), so a plan that deletes a control a policy still binds once the
 * plan is applied (a policy of another owner, or one made through the API) says so up
 * front as a conflict, instead of apply finding out halfway. The delete stays in the
 * operations: hot reload applies it and fails loudly, the CLI refuses the plan whole.
 */
import type { ActualState } from './desired-state.js';
import type { PolicyOperation } from './plan-policies.js';
import type { Conflict } from './plan-types.js';

/**
 * One conflict per control of `deleted` that a policy binds once the plan's policy
 * operations are applied, naming the policies.
 */
export function refusedDeletes(deleted: readonly string[], policyOperations: readonly PolicyOperation[], actual: Pick<ActualState, 'policies' | 'controls'>): Conflict[] {
  if (deleted.length === 0) return [];
  // Each policy's controls once the plan is applied: the plan's own writes win.
  const after = new Map((actual.policies ?? []).map((p) => [p.name, { controls: p.controls, managed_by: p.managed_by }]));
  for (const o of policyOperations) {
    if (o.op === 'delete_policy') after.delete(o.name);
    else after.set(o.name, { controls: o.policy.controls, managed_by: o.managed_by });
  }
  const owners = new Map(actual.controls.map((c) => [c.name, c.managed_by]));
  const conflicts: Conflict[] = [];
  for (const name of deleted) {
    const bound_by = [...after]
      .filter(([, p]) => p.controls.includes(name))
      .map(([policy, p]) => ({ policy, managed_by: p.managed_by }))
      .sort((a, b) => (a.policy < b.policy ? -1 : 1));
    if (bound_by.length > 0) conflicts.push({ name, managed_by: owners.get(name) ?? null, changes: [], bound_by });
  }
  return conflicts;
}
