/**
 * The check `init` makes before an agent starts: that some control is in force for it.
 * An agent with none lets every step through, and the usual cause is a misspelt name
 * (`data-analsyt`), which the server would otherwise register as a new, empty agent.
 */
import type { GuardClient } from '../client/index.js';
import { ApiError } from '../errors.js';
import { modeOf, selectsAgent, type ControlRecord } from '../model/index.js';
import { UnguardedAgentError } from './errors.js';
import { editDistance } from '../model/edit-distance.js';

/** Controls that can change a decision: enabled, with data, not in shadow mode. */
export function enforcingCount(records: readonly ControlRecord[]): number {
  let n = 0;
  for (const r of records) if (r.enabled && r.data !== null && r.data.enabled !== false && modeOf(r.data) !== 'shadow') n++;
  return n;
}

/**
 * The agent's controls as the server has them before registration: null when the agent
 * is unknown. Other failures (the server unreachable, a bad key) are raised.
 */
export async function controlsBeforeRegistration(client: GuardClient, agentName: string): Promise<readonly ControlRecord[] | null> {
  try {
    return (await client.getAgentControls(agentName)).controls;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/**
 * Whether some policy on the server selects an agent of this name with these labels (so
 * registering it with them guards it). A server without policies, or one that refuses the
 * read, counts as "no": the check after registration decides then.
 */
export async function selectedByPolicy(client: GuardClient, agentName: string, labels: Record<string, string> | undefined): Promise<boolean> {
  try {
    const policies = await client.policies.listAll();
    return policies.some((p) => p.controls.length > 0 && selectsAgent(p.agents, agentName.trim().toLowerCase(), labels ?? {}));
  } catch {
    return false;
  }
}

export async function unguardedError(client: GuardClient, agentName: string, registered: boolean): Promise<UnguardedAgentError> {
  let known: string[] = [];
  try {
    known = (await client.listAgents()).map((a) => a.agent_name).filter((name) => name !== agentName);
  } catch {
    // The suggestions are a courtesy: the refusal stands without them.
  }
  const suggestions = nearestNames(agentName, known);
  const guess = suggestions.length > 0 ? ` (did you mean ${suggestions.map((s) => JSON.stringify(s)).join(' or ')}?)` : '';
  const why = registered ? 'none linked, or all disabled or in shadow mode' : 'the server does not know this agent';
  return new UnguardedAgentError(
    agentName,
    registered,
    suggestions,
    `agent ${JSON.stringify(agentName)} has no controls (${why})${guess}: every step would run unchecked. ` +
      'Check the name, link controls to the agent, or pass allowUnguarded: true to start it anyway.',
  );
}

/**
 * The candidates closest to a name (case-insensitive edit distance, at most a third of its
 * length and at least 2), nearest first, at most three.
 */
export function nearestNames(word: string, candidates: readonly string[]): string[] {
  const limit = Math.max(2, Math.floor(word.length / 3));
  return candidates
    .map((name) => ({ name, distance: editDistance(word.toLowerCase(), name.toLowerCase()) }))
    .filter((c) => c.distance <= limit)
    .sort((a, b) => a.distance - b.distance || a.name.localeCompare(b.name))
    .slice(0, 3)
    .map((c) => c.name);
}
