/**
 * Compiles each agent's linked controls once, the same way the server does, so that tests
 * and replay decide exactly as production would. Pure: data in, compiled sets out.
 */
import { CompileCache, compileControls, type CompiledControlSet } from '../engine/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { ControlData } from '../model/index.js';

export interface NamedControl {
  /** The server's id when known; otherwise a stable position-based id. */
  control_id?: number;
  name: string;
  data: ControlData | null;
}

export interface AgentLinks {
  agent_name: string;
  /** Names of linked controls. */
  controls: readonly string[];
}

/** Compiled sets keyed by (normalised) agent name. */
export type AgentSets = ReadonlyMap<string, CompiledControlSet>;

export function compileAgentSets(
  controls: readonly NamedControl[],
  agents: readonly AgentLinks[],
  registry: EvaluatorRegistry,
): Map<string, CompiledControlSet> {
  const byName = new Map<string, { control_id: number; name: string; data: ControlData | null }>();
  controls.forEach((c, index) => {
    if (!byName.has(c.name)) byName.set(c.name, { control_id: c.control_id ?? index + 1, name: c.name, data: c.data });
  });
  const sets = new Map<string, CompiledControlSet>();
  // As in the server: a control linked to several agents is compiled once.
  const cache = new CompileCache();
  for (const agent of agents) {
    const linked = [...new Set(agent.controls)]
      .map((name) => byName.get(name))
      .filter((c): c is NonNullable<typeof c> => c !== undefined)
      // The server evaluates linked controls in id order; keep that order here too.
      .sort((a, b) => a.control_id - b.control_id);
    // Label keys (`labels:{...}`) keep their case: label values are case-sensitive.
    const key = agent.agent_name.startsWith('labels:') ? agent.agent_name : agent.agent_name.trim().toLowerCase();
    sets.set(key, compileControls(linked, registry, { cache }));
  }
  return sets;
}
