/**
 * The gateway's pinned tools: with --mcp-server-name, the kind: McpServer document of that
 * name is read from the guard server at start and polled for changes (apply, hot reload)
 * every PIN_REFRESH_MS. Without a document: --require-pin refuses to start (and, should the
 * document be deleted later, lists no tool and refuses every call); otherwise the gateway
 * says so and passes tools through unpinned. Each drift is reported to the guard server
 * (counted there and recorded as an event) in the background.
 */
import { DriftReporter } from '../../src/adapters/mcp-drift-report.js';
import { McpPins } from '../../src/adapters/mcp-pins.js';
import { UserError } from '../../src/errors.js';
import { clientOf, type Connection } from '../options.js';
import type { McpProxyPlan } from './mcp-proxy-plan.js';

/** How often the pinned document is read again. */
export const PIN_REFRESH_MS = 5000;

export async function startPins(plan: McpProxyPlan, connection: Connection, report = (line: string) => void process.stderr.write(`[guardctl mcp-proxy] ${line}\n`)): Promise<McpPins | undefined> {
  if (plan.serverName === undefined) return undefined;
  const client = clientOf(connection);
  const name = plan.serverName;
  const drifts = new DriftReporter({ agentName: plan.agentName, mode: plan.onDrift, send: (server, body) => client.mcpServers.reportDrift(server, body), say: report });
  const pins = new McpPins({
    serverName: name,
    mode: plan.onDrift,
    requirePin: plan.requirePin,
    fetch: () => client.mcpServers.get(name),
    report,
    onDrift: (drift) => drifts.report(drift),
    refreshMs: PIN_REFRESH_MS,
  });
  let pinned: boolean;
  try {
    pinned = await pins.start();
  } catch (error) {
    throw new UserError(`could not read the pinned tools of "${name}" from ${connection.serverUrl}: ${error instanceof Error ? error.message : String(error)}`, 'start the guard server or point --server / GUARD_URL at it');
  }
  if (!pinned && plan.requirePin) {
    pins.stop();
    throw new UserError(`no kind: McpServer document named "${name}" on ${connection.serverUrl}, and --require-pin is given`, `pin the server (guardctl mcp-pin --name ${name} --out controls/mcp/${name}.yaml -- ...) and apply it`);
  }
  if (!pinned) report(`no kind: McpServer document named "${name}" on the guard server: its tools pass through unpinned (until one is applied)`);
  return pins;
}
