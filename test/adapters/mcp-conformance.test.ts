/**
 * Transparency (issue #39 item 2): the MCP conformance suite (@modelcontextprotocol/
 * conformance, pinned) run against the reference "everything" server (pinned) directly,
 * and through the gateway's HTTP face in front of it (over HTTP, and over stdio with a
 * process per session), gives the same result in every scenario. The suite's own
 * verdicts on that server do not matter here (it is not the suite's test server): only
 * that the gateway changes none of them. DNS rebinding is the exception: the gateway
 * refuses a rebound Host and a foreign Origin itself, so it may only do better. The
 * resumability scenario (server-sse-polling) needs a tool the everything server lacks:
 * it is also run against a server that has it, check by check.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMcpHttpGateway, type McpHttpGateway } from '../../src/adapters/mcp-http.js';
import type { McpUpstream } from '../../src/adapters/mcp.js';
import { GuardAgent } from '../../src/sdk/index.js';
import { quietLogger } from './guarded-agent.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const everything = join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const conformance = join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const node20 = join(root, 'test/fixtures/mcp/node20-conformance.mjs');
const reconnection = join(root, 'test/fixtures/mcp/reconnection-server.mjs');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** What the suite prints, run against `url` (with `args`: say, one scenario). */
function suiteOutput(url: string, args: string[] = []): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', node20, conformance, 'server', '--url', url, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('close', () => resolve(out));
  });
}

/** Scenario name -> "passed/failed", from the suite's summary lines (`✓ ping: 1 passed, 0 failed`). */
function runSuite(url: string): Promise<Map<string, string>> {
  return suiteOutput(url).then((out) => {
    const results = new Map<string, string>();
    for (const m of out.matchAll(/^[✓✗] ([\w-]+): (\d+) passed, (\d+) failed$/gmu)) results.set(m[1]!, `${m[2]}/${m[3]}`);
    if (results.size === 0) throw new Error(`the conformance suite reported nothing:\n${out}`);
    return results;
  });
}

/** One scenario's checks as "check-id STATUS" lines, in order (the suite's colours stripped). */
async function scenarioChecks(url: string, scenario: string): Promise<string[]> {
  // eslint-disable-next-line no-control-regex
  const out = (await suiteOutput(url, ['--scenario', scenario])).replace(/\x1b\[[0-9;]*m/g, '');
  return [...out.matchAll(/^\S+ \[([\w-]+)\s*\] (\w+)/gm)].map((m) => `${m[1]} ${m[2]}`);
}

/** An MCP server over HTTP on a free port (told as PORT and MCP_FIXTURE_HTTP_PORT), once it listens. */
async function startHttpServer(script: string, args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [script, ...args], { env: { PATH: process.env.PATH ?? '', PORT: String(port), MCP_FIXTURE_HTTP_PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve) => child.stderr.on('data', (c: Buffer) => c.toString().includes('listening') && resolve()));
  return { child, url: `http://127.0.0.1:${port}/mcp` };
}

let upstream: ChildProcess;
let upstreamUrl: string;
const gateways: McpHttpGateway[] = [];
const guard = new GuardAgent({ agentName: 'conformance', serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, []);

beforeAll(async () => {
  ({ child: upstream, url: upstreamUrl } = await startHttpServer(everything, ['streamableHttp']));
});
afterAll(async () => {
  for (const gw of gateways) await gw.close();
  await guard.shutdown();
  upstream.kill();
});

async function through(target: McpUpstream): Promise<string> {
  const gw = await startMcpHttpGateway({ guard, upstream: target, host: '127.0.0.1', port: 0, auth: { none: true }, report: () => undefined });
  gateways.push(gw);
  return gw.url;
}

function expectSame(direct: Map<string, string>, gated: Map<string, string>): void {
  expect([...gated.keys()].sort()).toEqual([...direct.keys()].sort());
  for (const [scenario, result] of direct) {
    const [passed] = gated.get(scenario)!.split('/').map(Number);
    if (scenario === 'dns-rebinding-protection') expect(passed, scenario).toBeGreaterThanOrEqual(Number(result.split('/')[0]));
    else expect(gated.get(scenario), scenario).toBe(result);
  }
}

describe('the MCP conformance suite, directly and through the gateway', () => {
  it('gives the same results in front of an HTTP server and a stdio one', { timeout: 180_000 }, async () => {
    // The three runs at once: each suite run waits on its server most of the time, and each has sessions of its own.
    const [direct, viaHttp, viaStdio] = await Promise.all([
      runSuite(upstreamUrl),
      through({ url: upstreamUrl }).then(runSuite),
      through({ command: process.execPath, args: [everything, 'stdio'] }).then(runSuite),
    ]);
    expect(direct.size).toBeGreaterThan(20);
    expectSame(direct, viaHttp);
    expectSame(direct, viaStdio);
  });

  it('gives the same checks in the resumability scenario (server-sse-polling) against a server that closes a call\'s stream', { timeout: 60_000 }, async () => {
    const server = await startHttpServer(reconnection, []);
    try {
      const direct = await scenarioChecks(server.url, 'server-sse-polling');
      expect(direct).toContain('server-sse-disconnect-resume INFO');
      expect(direct.filter((c) => c.endsWith(' FAILURE'))).toEqual([]);
      expect(await scenarioChecks(await through({ url: server.url }), 'server-sse-polling')).toEqual(direct);
    } finally {
      server.child.kill();
    }
  });
});
