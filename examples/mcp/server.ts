/**
 * A small MCP server over stdio with the two tools of the examples' scenario (run_sql and
 * deploy), built with @modelcontextprotocol/sdk. `guardctl mcp-proxy` goes in front of it
 * (see client.ts and README.md).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { deploy, runSql } from '../shared/scenario.js';

const server = new McpServer({ name: 'warehouse', version: '1.0.0' });
server.registerTool('run_sql', { description: 'Run one SQL statement', inputSchema: { query: z.string() } }, async (args) => ({
  content: [{ type: 'text', text: await runSql(args) }],
}));
server.registerTool('deploy', { description: 'Deploy a service', inputSchema: { service: z.string(), environment: z.string() } }, async (args) => ({
  content: [{ type: 'text', text: await deploy(args) }],
}));
await server.connect(new StdioServerTransport());
