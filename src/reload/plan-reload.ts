/**
 * PURE: the plan a reload applies. It is the GitOps plan (`plan()` with prune and force),
 * adapted to watch mode's ownership:
 * - ownership is `watch:<dir>` instead of `gitops:<owner>`: the actual state is relabelled
 *   before planning, so prune deletes exactly the controls this watch created;
 * - force: a control of the same name made by hand or by `guardctl apply` is taken over
 *   (the directory is the truth);
 * - an agent whose document was removed loses its links to watched controls;
 * - a control whose document moved (file renamed, lines shifted) gets its new `source`,
 *   so a 409 on a write names the right file.
 */
import type { ActualState, DesiredAgent, DesiredState } from '../gitops/desired-state.js';
import { plan, sortOperations, type Operation } from '../gitops/plan.js';

/** The owner handed to plan(); never written to the store (see relabel). */
const PLAN_OWNER = 'hot-reload';
const PLAN_LABEL = `gitops:${PLAN_OWNER}`;

export function watchLabel(dir: string): string {
  return `watch:${dir}`;
}

export function planReload(desired: DesiredState, actual: ActualState, managedBy: string): Operation[] {
  const owned = new Set(actual.controls.filter((c) => c.managed_by === managedBy).map((c) => c.name));
  const relabelled: ActualState = {
    agents: actual.agents,
    controls: actual.controls.map((c) => ({
      ...c,
      // A `guardctl apply --owner hot-reload` control must not look like ours.
      managed_by: owned.has(c.name) ? PLAN_LABEL : c.managed_by === PLAN_LABEL ? `${PLAN_LABEL}(apply)` : c.managed_by,
    })),
  };

  const inDirectory = new Set(desired.agents.map((a) => a.agent_name));
  const orphans: DesiredAgent[] = actual.agents
    .filter((a) => !inDirectory.has(a.agent_name) && a.controls.some((name) => owned.has(name)))
    .map((a) => ({ agent_name: a.agent_name, fields: {}, controls: a.controls.filter((name) => !owned.has(name)) }));

  const operations = plan({ controls: desired.controls, agents: [...desired.agents, ...orphans] }, relabelled, {
    owner: PLAN_OWNER,
    prune: true,
    force: true,
  }).operations;

  const updated = new Set(operations.filter((o) => o.op === 'update_control' || o.op === 'create_control').map((o) => o.name));
  const actualByName = new Map(actual.controls.map((c) => [c.name, c]));
  for (const want of desired.controls) {
    const have = actualByName.get(want.name);
    if (!have || updated.has(want.name) || have.source === want.source) continue;
    operations.push({
      op: 'update_control',
      name: want.name,
      changes: [{ path: 'source', before: have.source, after: want.source }],
      data: want.data,
      managed_by: managedBy,
      source: want.source,
    });
  }
  return sortOperations(operations);
}
