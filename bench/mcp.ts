/**
 * The MCP gateway's added latency: the same `tools/call` made by the MCP SDK's Client over
 * stdio, once straight to the MCP server (examples/mcp/server.ts, built) and once through
 * `guardctl mcp-proxy` with 20 `execution: sdk` controls on the tool (10 checked on the
 * arguments, 10 on the result, all in the proxy's process), in the same run, the paths
 * taking turns in blocks of calls. Each call is timed on its own: median and p99 of both,
 * and what the proxy adds. The HTTP face
 * (`mcp-proxy --listen`, the client over streamable HTTP) is timed twice in the same run:
 * in front of an HTTP server (the same tool over streamable HTTP, bench/mcp-http-upstream.ts,
 * `--upstream-url`) against calling that server straight over HTTP, which is what the face
 * adds; and in front of the stdio server against the straight stdio call, which adds the
 * HTTP hop in place of a pipe as well. A proxy that checks nothing (mcp-null-proxy.ts), on
 * both transports, is the floor: what one more process on the path costs on this host.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { fetchWithOwnSignals } from './mcp-fetch.js';
import { GuardClient } from '../src/client/index.js';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';

const CONTROLS = 20;
const WARMUP = 500;
/** Enough that p99 is the 50th slowest call of each run, not one unlucky scheduling. */
const CALLS = 5000;
const dist = join(import.meta.dirname, '..');
const server = join(dist, 'examples/mcp/server.js');
const cli = join(dist, 'cli/main.js');
const nullProxyScript = join(dist, 'bench/mcp-null-proxy.js');

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!;
}

/** Timed in blocks of CALLS / BLOCKS calls, each path's blocks taking turns: a host busy for a while slows every path alike. */
const BLOCKS = 10;

/**
 * Microseconds of each of CALLS tools/call round trips per transport, after WARMUP untimed
 * ones, the transports taking turns block by block (the first of each round changes).
 */
async function timeCalls(transports: Transport[]): Promise<number[][]> {
  const clients: Client[] = [];
  try {
    for (const transport of transports) {
      const client = new Client({ name: 'bench', version: '1.0.0' });
      await client.connect(transport);
      clients.push(client);
    }
    const call = async (client: Client) => {
      const result = await client.callTool({ name: 'run_sql', arguments: { query: 'SELECT id, status FROM orders WHERE customer_id = 42' } }, CallToolResultSchema);
      if (result.isError) throw new Error('the benchmark call was refused: the controls must allow it');
    };
    for (const client of clients) for (let i = 0; i < WARMUP; i++) await call(client);
    const micros = clients.map((): number[] => []);
    for (let block = 0; block < BLOCKS; block++) {
      for (let turn = 0; turn < clients.length; turn++) {
        const at = (block + turn) % clients.length;
        for (let i = 0; i < CALLS / BLOCKS; i++) {
          const start = performance.now();
          await call(clients[at]!);
          micros[at]!.push((performance.now() - start) * 1000);
        }
      }
    }
    return micros;
  } finally {
    for (const client of clients) await client.close();
  }
}

async function run(): Promise<BenchRow[]> {
  const guard = await startGuardServer();
  try {
    const api = new GuardClient({ serverUrl: guard.url });
    await api.initAgent({ agent_name: 'bench-mcp' });
    for (let i = 1; i <= CONTROLS; i++) {
      const pre = i <= CONTROLS / 2;
      const { control_id } = await api.createControl({
        name: `mcp-bench-${i}`,
        data: {
          execution: 'sdk',
          scope: { step_types: ['tool'], step_names: ['run_sql'], stages: [pre ? 'pre' : 'post'] },
          selector: { path: pre ? 'input.query' : 'output' },
          evaluator:
            i % 2 === 0
              ? { name: 'regex', config: { pattern: `(?i)\\b(drop|truncate|grant${i})\\s+table\\b` } }
              : { name: 'list', config: { values: [`forbidden-${i}`, 'rm -rf', 'shutdown'], match_mode: 'contains' } },
          action: { decision: 'deny' },
        },
      });
      await api.link('bench-mcp', control_id);
    }
    const stdio = (args: string[]) => new StdioClientTransport({ command: process.execPath, args, stderr: 'ignore' });
    const children: ChildProcess[] = [];
    let direct: number[], proxied: number[], http: number[], directHttp: number[], httpToHttp: number[], nullStdio: number[], nullHttp: number[];
    try {
      const upstream = await startHttpUpstream();
      children.push(upstream.child);
      const face = async (args: string[]) => {
        const started = await startHttpFace(guard.url, args);
        children.push(started.child);
        return httpClient(started.url);
      };
      const nullProxy = await startNullHttpProxy(upstream.url);
      children.push(nullProxy.child);
      [direct, proxied, http, directHttp, httpToHttp, nullStdio, nullHttp] = (await timeCalls([
        stdio([server]),
        stdio([cli, 'mcp-proxy', '--agent', 'bench-mcp', '--server', guard.url, '--', process.execPath, server]),
        await face(['--', process.execPath, server]),
        httpClient(upstream.url),
        await face(['--upstream-url', upstream.url]),
        stdio([nullProxyScript, '--', process.execPath, server]),
        httpClient(nullProxy.url),
      ])) as [number[], number[], number[], number[], number[], number[], number[]];
    } finally {
      for (const child of children) child.kill('SIGTERM');
    }
    const [dMed, pMed, dP99, pP99] = [median(direct), median(proxied), p99(direct), p99(proxied)];
    const [hMed, hP99] = [median(http), p99(http)];
    const [dhMed, dhP99, hhMed, hhP99] = [median(directHttp), p99(directHttp), median(httpToHttp), p99(httpToHttp)];
    const [nsMed, nsP99, nhMed, nhP99] = [median(nullStdio), p99(nullStdio), median(nullHttp), p99(nullHttp)];
    const note = `${CALLS} sequential calls each, in blocks of ${CALLS / BLOCKS} taking turns across the seven paths, ${CONTROLS} sdk controls in the proxy`;
    // What the gateway adds beyond a proxy that checks nothing (mcp-null-proxy.ts), in the same run.
    const beyond = (gateway: number, floor: number) => `${Math.round(gateway - floor)} µs beyond the proxy that checks nothing (${Math.round(floor)} µs)`;
    // The added latency over the straight call's own: a host's speed drops out of it (the goals stay in µs, as issue #39 states them).
    const added = (through: number, straight: number) => (through - straight) / straight;
    return [
      { name: 'tools/call straight to the MCP server over HTTP, median', value: dhMed, unit: 'µs' },
      { name: 'tools/call straight to the MCP server over HTTP, p99', value: dhP99, unit: 'µs' },
      { name: 'tools/call through mcp-proxy --listen to an HTTP server, median', value: hhMed, unit: 'µs' },
      { name: 'tools/call through mcp-proxy --listen to an HTTP server, p99', value: hhP99, unit: 'µs' },
      { name: 'a proxy that checks nothing, added latency (HTTP server), median', value: nhMed - dhMed, unit: 'µs', note: 'node:http forwarding over a keep-alive connection, in a process of its own: the floor of an HTTP hop on this host' },
      { name: 'a proxy that checks nothing, added latency (HTTP server), p99', value: nhP99 - dhP99, unit: 'µs' },
      { name: 'mcp-proxy --listen added latency (HTTP server), median', value: hhMed - dhMed, unit: 'µs', goal: '< 500 µs', pass: hhMed - dhMed < 500, note: `${(hhMed / dhMed).toFixed(2)}× the direct HTTP call; ${beyond(hhMed - dhMed, nhMed - dhMed)}; ${note}` },
      { name: 'mcp-proxy --listen added latency (HTTP server), p99', value: hhP99 - dhP99, unit: 'µs', goal: '< 2000 µs', pass: hhP99 - dhP99 < 2000, note: `${(hhP99 / dhP99).toFixed(2)}× the direct HTTP call; ${beyond(hhP99 - dhP99, nhP99 - dhP99)}` },
      { name: 'mcp-proxy --listen added latency (HTTP server) / straight HTTP call, median', value: added(hhMed, dhMed), unit: 'x', note: 'the same medians as above, as a ratio' },
      { name: 'mcp-proxy --listen added latency (HTTP server) / straight HTTP call, p99', value: added(hhP99, dhP99), unit: 'x', note: 'the same p99s as above, as a ratio' },
      { name: 'tools/call through mcp-proxy --listen (HTTP), median', value: hMed, unit: 'µs' },
      { name: 'tools/call through mcp-proxy --listen (HTTP), p99', value: hP99, unit: 'µs' },
      { name: 'mcp-proxy --listen added latency, median', value: hMed - dMed, unit: 'µs', note: `${(hMed / dMed).toFixed(2)}× the direct stdio call; an HTTP hop in place of a pipe, so no goal` },
      { name: 'mcp-proxy --listen added latency, p99', value: hP99 - dP99, unit: 'µs', note: `${(hP99 / dP99).toFixed(2)}× the direct stdio call` },
      { name: 'tools/call straight to the MCP server, median', value: dMed, unit: 'µs' },
      { name: 'tools/call straight to the MCP server, p99', value: dP99, unit: 'µs' },
      { name: 'tools/call through mcp-proxy, median', value: pMed, unit: 'µs' },
      { name: 'tools/call through mcp-proxy, p99', value: pP99, unit: 'µs' },
      { name: 'a proxy that checks nothing, added latency (stdio), median', value: nsMed - dMed, unit: 'µs', note: 'stdin and stdout piped through a process of its own: the floor of a stdio hop on this host' },
      { name: 'a proxy that checks nothing, added latency (stdio), p99', value: nsP99 - dP99, unit: 'µs' },
      { name: 'mcp-proxy added latency, median', value: pMed - dMed, unit: 'µs', goal: '< 500 µs', pass: pMed - dMed < 500, note: `${(pMed / dMed).toFixed(2)}× the direct call; ${beyond(pMed - dMed, nsMed - dMed)}; ${note}` },
      { name: 'mcp-proxy added latency, p99', value: pP99 - dP99, unit: 'µs', goal: '< 2000 µs', pass: pP99 - dP99 < 2000, note: `${(pP99 / dP99).toFixed(2)}× the direct call; ${beyond(pP99 - dP99, nsP99 - dP99)}` },
      { name: 'mcp-proxy added latency / straight call, median', value: added(pMed, dMed), unit: 'x', note: 'the same medians as above, as a ratio' },
      { name: 'mcp-proxy added latency / straight call, p99', value: added(pP99, dP99), unit: 'x', note: 'the same p99s as above, as a ratio' },
    ];
  } finally {
    guard.child.kill('SIGTERM');
  }
}

/**
 * The client's transport over streamable HTTP. Its fetch gives each request a signal of
 * its own (mcp-fetch.ts): on the transport's shared one, Node 20's fetch left a listener
 * per call and printed a MaxListenersExceededWarning per call past 1,500, in the timed loop.
 */
function httpClient(url: string): StreamableHTTPClientTransport {
  return new StreamableHTTPClientTransport(new URL(url), { fetch: fetchWithOwnSignals() });
}

/**
 * The first match of `pattern` in a child's stderr (or stdout). What the child writes
 * after it is read and dropped, never gathered: matching a growing text on each chunk in
 * the benchmark's process would be timed with the calls.
 */
function outputMatch(child: ChildProcess, pattern: RegExp, what: string, stream: 'stderr' | 'stdout' = 'stderr'): Promise<string> {
  const output = child[stream]!;
  return new Promise<string>((resolve, reject) => {
    let text = '';
    const onData = (c: Buffer): void => {
      text += c.toString();
      const found = pattern.exec(text);
      if (!found) return;
      output.off('data', onData);
      output.resume();
      resolve(found[1]!);
    };
    output.on('data', onData);
    child.once('exit', () => reject(new Error(`${what} exited: ${text}`)));
  });
}

/**
 * The guard server (`guardctl serve`, in memory, events taken and not kept) in a process
 * of its own, as in production: started in the benchmark's process, its handling of each
 * batch of the gateway's events held the client's event loop in the middle of timed calls.
 */
async function startGuardServer(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [cli, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', ':memory:'], {
    stdio: ['ignore', 'pipe', 'ignore'],
    env: { PATH: process.env.PATH, OBSERVABILITY_ENABLED: 'false' },
  });
  const url = await outputMatch(child, /listening on (http:\/\/[^\s"]+)/, 'guardctl serve', 'stdout');
  return { url, child };
}

/** The MCP server over streamable HTTP, in a process of its own. */
async function startHttpUpstream(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(dist, 'bench/mcp-http-upstream.js')], { stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await outputMatch(child, /listening on (\d+)/, 'the HTTP MCP server');
  return { url: `http://127.0.0.1:${port}/mcp`, child };
}

/** The proxy that checks nothing (mcp-null-proxy.ts) in front of the HTTP server. */
async function startNullHttpProxy(upstream: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [nullProxyScript, '--http', upstream], { stdio: ['ignore', 'ignore', 'pipe'] });
  return { url: await outputMatch(child, /null proxy at (\S+)/, 'the proxy that checks nothing'), child };
}

/** The HTTP face, started as an operator would (loopback, no auth) in front of `upstream`. */
async function startHttpFace(guardUrl: string, upstream: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [cli, 'mcp-proxy', '--agent', 'bench-mcp', '--server', guardUrl, '--listen', '127.0.0.1:0', '--no-auth', ...upstream], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return { url: await outputMatch(child, /serving MCP at (\S+)/, 'mcp-proxy --listen'), child };
}

const benchmarks: Benchmark[] = [{ name: 'mcp proxy latency', run }];

export const section: BenchSection = {
  name: 'MCP gateway',
  chapter: 'CLI, dashboard, SDK and gateway',
  method: `The same \`tools/call\` made by the MCP SDK's Client over stdio, straight to the MCP server
(examples/mcp/server.ts, built; the baseline) and through \`guardctl mcp-proxy\` with 20
\`execution: sdk\` controls on the tool (10 on the arguments, 10 on the result, all in the
proxy's process; the guard server they report events to runs in a process of its own),
5,000 calls each (after 500 untimed) in the same run, timed in blocks of 500 that take turns
across the seven paths, so that a host busy for a while slows each path alike. The HTTP face (\`--listen\`) is timed
in front of the same tool served over streamable HTTP (\`--upstream-url\`) against calling
that server straight over HTTP, and in front of the stdio server against the straight
stdio call (an HTTP hop in place of a pipe, so no goal). The floor of both goals is timed
in the same run: a proxy that checks nothing (bench/mcp-null-proxy.ts, a process of its
own that pipes stdio, or forwards HTTP with node:http over a keep-alive connection).
Each call is timed on its own: median and p99 of both, and what the proxy adds, in µs
(the goals), beyond the proxy that checks nothing, and as a ratio to the straight call's
own median and p99 (which a host's speed drops out of).`,
  benchmarks,
};
