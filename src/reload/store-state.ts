/**
 * The store's side of a hot-reload plan: controls, agents and links read straight from
 * the Store (no HTTP), in the same ActualState shape the GitOps plan compares against.
 */
import { actualMcpServersOf, actualStateOf, type ActualState } from '../gitops/desired-state.js';
import type { Store } from '../store/types.js';

export async function readStoreState(store: Pick<Store, 'listAllControls' | 'listAgents' | 'listLinks' | 'listAllPolicies' | 'listAllMcpServers'>): Promise<ActualState> {
  const [controls, agents, links, policies, mcpServers] = await Promise.all([
    store.listAllControls(),
    store.listAgents(),
    store.listLinks(),
    store.listAllPolicies(),
    store.listAllMcpServers(),
  ]);
  const nameOf = new Map(controls.map((c) => [c.control_id, c.name]));
  const linked = new Map<string, string[]>();
  for (const link of links) {
    const name = nameOf.get(link.control_id);
    // A link to a control that vanished between the reads is not worth planning around.
    if (name === undefined) continue;
    const list = linked.get(link.agent_name) ?? [];
    list.push(name);
    linked.set(link.agent_name, list);
  }
  const state = actualStateOf(
    controls,
    agents.map((a) => ({ ...a, controls: linked.get(a.agent_name) ?? [] })),
    policies,
  );
  return { ...state, mcp_servers: actualMcpServersOf(mcpServers) };
}
