/** Reads the server's controls, agents and links through the REST client. */
import type { GuardClient } from '../client/index.js';
import { ApiError, UserError } from '../errors.js';
import { actualMcpServersOf, actualStateOf, type ActualState } from './desired-state.js';

/** How many agent lookups run at once: enough to hide latency, few enough to be polite. */
const AGENT_CONCURRENCY = 8;

/** Reads before giving up when every read of the state overlapped a write. */
const CONSISTENT_READ_ATTEMPTS = 5;

/**
 * The state takes several requests to read; the store revision read before and after
 * them tells whether a write came in between. The state comes with the revision it is
 * consistent with (none from a server without `GET /changes/revision`).
 */
export async function fetchActualState(client: GuardClient): Promise<ActualState> {
  for (let attempt = 1; ; attempt++) {
    const before = await revisionOf(client);
    const state = await readState(client);
    if (before === null) return state;
    const after = await revisionOf(client);
    if (after === before) return { ...state, revision: after };
    if (attempt === CONSISTENT_READ_ATTEMPTS) {
      throw new UserError(
        `the server's controls changed during each of ${CONSISTENT_READ_ATTEMPTS} reads of its state (another apply or a hot reload is writing)`,
        'wait until the other writer is done, then run the command again',
      );
    }
  }
}

async function revisionOf(client: GuardClient): Promise<number | null> {
  try {
    return await client.getRevision();
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

async function readState(client: GuardClient): Promise<ActualState> {
  const [state, mcpServers] = await Promise.all([readControlsState(client), mcpServersOf(client)]);
  return mcpServers ? { ...state, mcp_servers: actualMcpServersOf(mcpServers) } : state;
}

async function readControlsState(client: GuardClient): Promise<ActualState> {
  const [controls, agents, policies] = await Promise.all([client.listAllControls(100), client.listAgents([], 'links'), policiesOf(client)]);
  // A server that knows include=links answers every agent's links at once.
  if (agents.every((a) => Array.isArray(a.links))) return actualStateOf(controls, agents.map(({ links, ...a }) => ({ ...a, controls: links ?? [] })), policies);
  const withLinks = await mapLimit(agents, AGENT_CONCURRENCY, async (agent) => {
    const detail = await client.getAgent(agent.agent_name);
    // Only its own links: controls a policy binds are the policy's (no sources: a server without policies).
    const links = (detail.controls ?? []).filter((c) => !Array.isArray(c.sources) || c.sources.includes('link'));
    return { ...agent, controls: links.map((c) => c.name) };
  });
  return actualStateOf(controls, withLinks, policies);
}

/** The server's pinned MCP servers; undefined from a server that predates them (404). */
async function mcpServersOf(client: GuardClient) {
  try {
    return await client.mcpServers.listAll();
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  }
}

/** The server's policies; undefined from a server that predates them (404). */
async function policiesOf(client: GuardClient) {
  try {
    return await client.policies.listAll();
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return undefined;
    throw error;
  }
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
