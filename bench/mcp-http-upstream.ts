/**
 * The MCP benchmark's HTTP upstream: the example server's run_sql (examples/mcp/server.ts)
 * served over streamable HTTP at http://127.0.0.1:PORT/mcp, one MCP session per client, in
 * a process of its own as the stdio server is. Prints `listening on PORT` on stderr.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { runSql } from '../examples/shared/scenario.js';

function build(): McpServer {
  const server = new McpServer({ name: 'warehouse', version: '1.0.0' });
  server.registerTool('run_sql', { description: 'Run one SQL statement', inputSchema: { query: z.string() } }, async (args) => ({
    content: [{ type: 'text', text: await runSql(args) }],
  }));
  return server;
}

const sessions = new Map<string, StreamableHTTPServerTransport>();
const http = createServer((req, res) => {
  void (async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body: unknown = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (!transport) {
      const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void sessions.set(id, created) });
      await build().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res, body);
  })().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    if (!res.headersSent) res.writeHead(500).end();
  });
});
http.listen(0, '127.0.0.1', () => process.stderr.write(`listening on ${(http.address() as AddressInfo).port}\n`));
