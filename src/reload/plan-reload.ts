/**
 * PURE: the plan a reload applies. It is the GitOps plan, owned by the watch:
 * - its owner label is `watch:<dir>`, so prune deletes exactly the controls this watch created;
 * - force: a control of the same name made by hand or by `guardctl apply` is taken over
 *   (the directory is the truth);
 * - an agent whose document was removed loses its links to watched controls;
 * - a control whose document moved (file renamed, lines shifted) gets its new `source`,
 *   so a 409 on a write names the right file;
 * - the directory's policies are planned like its controls: created, updated, taken over,
 *   and this watch's policies the directory no longer defines are deleted;
 * - pinned MCP servers (kind: McpServer) are created, replaced and pruned like controls.
 */
import type { ActualState, DesiredAgent, DesiredState } from '../gitops/desired-state.js';
import { plan, type Operation } from '../gitops/plan.js';

export function watchLabel(dir: string): string {
  return `watch:${dir}`;
}

/** The reload's operations, in the plan's order. */
export function planReload(desired: DesiredState, actual: ActualState, managedBy: string): Operation[] {
  const owned = new Set(actual.controls.filter((c) => c.managed_by === managedBy).map((c) => c.name));
  const inDirectory = new Set(desired.agents.map((a) => a.agent_name));
  const orphans: DesiredAgent[] = actual.agents
    .filter((a) => !inDirectory.has(a.agent_name) && a.controls.some((name) => owned.has(name)))
    .map((a) => ({ agent_name: a.agent_name, fields: {}, controls: a.controls.filter((name) => !owned.has(name)) }));

  // Pinned MCP servers follow the directory too (prune: a removed document unpins its server).
  const mcp = desired.mcp_servers ? { mcp_servers: desired.mcp_servers } : {};
  return plan({ controls: desired.controls, agents: [...desired.agents, ...orphans], policies: desired.policies ?? [], ...mcp }, actual, {
    managedBy,
    prune: true,
    force: true,
    followSources: true,
  }).operations;
}
