/**
 * Lists a live MCP server's tools and reads its initialize instructions with the MCP SDK's own client (every page), for
 * `guardctl mcp-pin`. The started server gets the same minimal environment the gateway
 * gives it (mcp-env.ts): never GUARD_API_KEY.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListToolsResultSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { packageVersion } from '../version.js';
import { upstreamEnv } from './mcp-env.js';

export type ToolSource = { command: string[]; passEnv?: string[]; env?: Record<string, string> } | { url: string; headers?: Record<string, string> };

/**
 * A tools/list page as the server sent it. The SDK's own schema drops annotation keys it
 * does not know, while the gateway fingerprints each tool as the server sends it (and some
 * clients pass such keys on): a pin of the reshaped tool would never match, and an
 * unchanged tool would be hidden as changed.
 */
const SentListToolsResultSchema = z.looseObject({ tools: z.array(z.unknown()), nextCursor: z.string().optional() });

/** At most this many pages: a server whose cursor never ends must not hang the pin. */
const MAX_PAGES = 1000;

export async function listServerTools(source: ToolSource): Promise<{ serverName: string | undefined; instructions: string | undefined; tools: Tool[] }> {
  const transport =
    'url' in source
      ? new StreamableHTTPClientTransport(new URL(source.url), { requestInit: { headers: source.headers ?? {} } })
      : new StdioClientTransport({ command: source.command[0]!, args: source.command.slice(1), env: upstreamEnv(process.env, source.passEnv ?? [], source.env), stderr: 'inherit' });
  const client = new Client({ name: 'guardctl-mcp-pin', version: packageVersion() });
  await client.connect(transport);
  try {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const answer = await client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, SentListToolsResultSchema);
      // The SDK's checks still hold (a name, an object input schema, ...); what is pinned is what was sent.
      ListToolsResultSchema.parse(answer);
      tools.push(...(answer.tools as Tool[]));
      cursor = answer.nextCursor;
      if (!cursor) return { serverName: client.getServerVersion()?.name, instructions: client.getInstructions(), tools };
    }
    throw new Error(`the server listed more than ${MAX_PAGES} pages of tools`);
  } finally {
    await client.close();
  }
}
