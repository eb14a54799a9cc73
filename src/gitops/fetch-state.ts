/** Reads the server's controls, agents and links through the REST client. */
import type { GuardClient } from '../client/index.js';
import { actualStateOf, type ActualState } from './desired-state.js';

/** How many agent lookups run at once: enough to hide latency, few enough to be polite. */
const AGENT_CONCURRENCY = 8;

export async function fetchActualState(client: GuardClient): Promise<ActualState> {
  const [controls, agents] = await Promise.all([client.listAllControls(100), client.listAgents()]);
  const withLinks = await mapLimit(agents, AGENT_CONCURRENCY, async (agent) => {
    const detail = await client.getAgent(agent.agent_name);
    return { ...agent, controls: (detail.controls ?? []).map((c) => c.name) };
  });
  return actualStateOf(controls, withLinks);
}

export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
