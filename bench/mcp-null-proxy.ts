/**
 * The MCP benchmark's floor: a proxy that checks nothing, in a process of its own, so that
 * the gateway's added latency can be read against what one more process on the path costs
 * on the same host in the same run (bench/mcp.ts).
 *
 * - `mcp-null-proxy.js --http URL`: serves http://127.0.0.1:PORT/mcp and forwards each
 *   request to URL over a keep-alive connection, the answer piped back as it comes (SSE
 *   included). Prints `null proxy at URL` on stderr.
 * - `mcp-null-proxy.js -- COMMAND ARGS...`: starts COMMAND and pipes stdin to it and its
 *   stdout back, byte for byte.
 */
import { spawn } from 'node:child_process';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

const args = process.argv.slice(2);

if (args[0] === '--http' && args[1] !== undefined) {
  const upstream = new URL(args[1]);
  const agent = new Agent({ keepAlive: true });
  const server = createServer((req, res) => {
    const forwarded = request(
      { host: upstream.hostname, port: upstream.port, path: upstream.pathname, method: req.method, headers: { ...req.headers, host: upstream.host }, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });
  server.listen(0, '127.0.0.1', () => process.stderr.write(`null proxy at http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp\n`));
} else if (args[0] === '--' && args[1] !== undefined) {
  const child = spawn(args[1], args.slice(2), { stdio: ['pipe', 'pipe', 'inherit'] });
  process.stdin.pipe(child.stdin);
  child.stdout.pipe(process.stdout);
  child.on('exit', (code) => process.exit(code ?? 1));
  process.stdin.on('end', () => child.stdin.end());
} else {
  process.stderr.write('usage: mcp-null-proxy.js --http URL | -- COMMAND [ARGS...]\n');
  process.exit(2);
}
