/**
 * An MCP client (the part a desktop assistant or an IDE plays) that starts
 * `guardctl mcp-proxy` in front of examples/mcp/server.ts and makes the scenario's three
 * tool calls through it. The "model" here is the scripted list of calls.
 *
 *   npm start                  # terminal 1: the server with controls/
 *   npm run example:mcp        # terminal 2
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CALLS, exitOnFailure, printModelRead } from '../shared/scenario.js';

const cli = fileURLToPath(new URL('../../cli/main.js', import.meta.url));
const server = fileURLToPath(new URL('./server.js', import.meta.url));

async function main(): Promise<void> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp-proxy', '--agent', 'data-analyst', '--disclosure', 'name', '--', process.execPath, server],
    // GUARD_URL and GUARD_API_KEY reach the proxy with the rest of the environment.
    env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
  });
  const client = new Client({ name: 'example-client', version: '1.0.0' });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    console.log(`tools through the proxy: ${tools.map((t) => t.name).join(', ')}`);
    for (const call of CALLS) {
      const result = (await client.callTool({ name: call.tool, arguments: call.args }, CallToolResultSchema)) as CallToolResult;
      const text = result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('');
      console.log(`  ${result.isError ? 'REFUSED' : 'allow  '} ${call.tool} ${JSON.stringify(call.args)}`);
      printModelRead(text);
    }
  } finally {
    await client.close();
  }
}

main().catch(exitOnFailure);
