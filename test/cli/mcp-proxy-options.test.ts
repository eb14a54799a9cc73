import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { planMcpProxy } from '../../cli/commands/mcp-proxy.js';
import { UserError } from '../../src/errors.js';
import { runCliInProcess } from '../support/cli-in-process.js';

describe('guardctl mcp-proxy options', () => {
  it('takes the server command after --, or a streamable-HTTP URL', () => {
    expect(planMcpProxy(['node', 'server.js', '--port', '3'], { agent: ' Desk ' })).toMatchObject({
      agentName: 'Desk',
      upstream: { command: 'node', args: ['server.js', '--port', '3'] },
      requestTimeoutMs: 120_000,
      disclosure: 'minimal',
      failOpen: false,
    });
    expect(planMcpProxy([], { agent: 'a', upstreamUrl: 'http://127.0.0.1:3000/mcp', header: ['Authorization: Bearer x'] }).upstream).toEqual({
      url: 'http://127.0.0.1:3000/mcp',
      headers: { Authorization: 'Bearer x' },
    });
    expect(planMcpProxy(['x'], { agent: 'a', requestTimeout: '0' }).requestTimeoutMs).toBe(0);
    // The key a person's answer to an approval question is recorded with: from the environment only, never a flag (it is a secret).
    expect(planMcpProxy(['x'], { agent: 'a' }, { GUARD_MCP_APPROVER_API_KEY: ' approver-k ' }).approverApiKey).toBe('approver-k');
    expect(planMcpProxy(['x'], { agent: 'a' }, {}).approverApiKey).toBeUndefined();
    expect(planMcpProxy(['x'], { agent: 'a', passEnv: ['GITHUB_TOKEN', 'A,B'] }).upstream).toMatchObject({ passEnv: ['GITHUB_TOKEN', 'A', 'B'] });
    expect(planMcpProxy(['x'], { agent: 'a', requestTimeout: '2s', disclosure: 'full', failOpen: true })).toMatchObject({
      requestTimeoutMs: 2000, disclosure: 'full', failOpen: true,
    });
  });

  const refusals: Array<[string, string[], Parameters<typeof planMcpProxy>[1], RegExp]> = [
    ['no agent', ['x'], { agent: '  ' }, /--agent needs a name/],
    ['nothing to guard', [], { agent: 'a' }, /no MCP server to guard/],
    ['both a command and a URL', ['x'], { agent: 'a', upstreamUrl: 'http://h/mcp' }, /either a command after -- or --upstream-url/],
    ['a URL that is not http', [], { agent: 'a', upstreamUrl: 'file:///etc/passwd' }, /not an http\(s\) URL/],
    ['a --pass-env that is not a name', ['x'], { agent: 'a', passEnv: ['TOKEN=abc'] }, /--pass-env "TOKEN=abc" is not an environment variable name/],
    ['a bad header', [], { agent: 'a', upstreamUrl: 'http://h/mcp', header: ['novalue'] }, /not name:value/],
    ['a bad timeout', ['x'], { agent: 'a', requestTimeout: 'soon' }, /--request-timeout "soon" is not a duration/],
    ['an unknown disclosure', ['x'], { agent: 'a', disclosure: 'all' }, /--disclosure must be one of minimal, name, full/],
    ['no requests in flight', ['x'], { agent: 'a', maxPending: '0' }, /--max-pending "0" is not a positive whole number/],
    ['a fractional --max-pending', ['x'], { agent: 'a', maxPending: '1.5' }, /--max-pending "1.5" is not a positive whole number/],
    ['a size in an unknown unit', ['x'], { agent: 'a', maxMessage: '16GB' }, /--max-message "16GB" is not a size from 1KiB to 1024MiB/],
    ['a size too small for an initialize answer', ['x'], { agent: 'a', maxMessage: '100' }, /--max-message "100" is not a size/],
    ['a size past 1 GiB', ['x'], { agent: 'a', maxMessage: '2048MiB' }, /--max-message "2048MiB" is not a size/],
  ];

  it('reads --max-pending and --max-message, with their defaults', () => {
    expect(planMcpProxy(['x'], { agent: 'a' })).toMatchObject({ maxPending: 1000, maxMessageBytes: 64 * 1024 * 1024 });
    expect(planMcpProxy(['x'], { agent: 'a', maxPending: '8', maxMessage: '16MiB' })).toMatchObject({ maxPending: 8, maxMessageBytes: 16 * 1024 * 1024 });
    expect(planMcpProxy(['x'], { agent: 'a', maxMessage: '512 kib' }).maxMessageBytes).toBe(512 * 1024);
    expect(planMcpProxy(['x'], { agent: 'a', maxMessage: '4096' }).maxMessageBytes).toBe(4096);
  });
  for (const [what, command, flags, message] of refusals) {
    it(`refuses ${what}`, () => {
      expect(() => planMcpProxy(command, flags)).toThrow(UserError);
      expect(() => planMcpProxy(command, flags)).toThrow(message);
    });
  }

  describe('--listen', () => {
    const env = { GUARD_MCP_TOKEN: 'secret' };
    it('reads host:port and authenticates with GUARD_MCP_TOKEN by default', () => {
      expect(planMcpProxy(['x'], { agent: 'a', listen: '127.0.0.1:8080' }, env).listen).toEqual({
        host: '127.0.0.1', port: 8080, auth: 'token', token: 'secret', allowedOrigins: [], maxSessions: 1000,
      });
      expect(planMcpProxy(['x'], { agent: 'a', listen: '[::1]:0', auth: false }, {}).listen).toMatchObject({ host: '::1', port: 0, auth: 'none' });
      expect(planMcpProxy(['x'], { agent: 'a', listen: '0.0.0.0:80', authGuardKeys: true }, {}).listen).toMatchObject({ auth: 'guard-keys', token: undefined });
      expect(planMcpProxy(['x'], { agent: 'a', listen: 'localhost:1', allowOrigin: ['https://app.example.com'], maxSessions: '5' }, env).listen)
        .toMatchObject({ allowedOrigins: ['https://app.example.com'], maxSessions: 5 });
    });

    it.each([
      ['no credential configured', { listen: '127.0.0.1:8080' }, {}, /needs a way to authenticate clients/],
      ['--no-auth off loopback', { listen: '0.0.0.0:8080', auth: false }, env, /--no-auth is allowed on a loopback address only/],
      ['--no-auth on a rebindable name', { listen: 'gateway.internal:8080', auth: false }, env, /loopback address only/],
      ['not host:port', { listen: '8080' }, env, /is not host:port/],
      ['a port out of range', { listen: '127.0.0.1:70000' }, env, /is not host:port/],
      ['a bad origin', { listen: '127.0.0.1:1', allowOrigin: ['app.example.com'] }, env, /is not an origin/],
      ['a bad session bound', { listen: '127.0.0.1:1', maxSessions: '0' }, env, /--max-sessions "0"/],
    ] as const)('refuses %s', (_label, flags, environment, message) => {
      expect(() => planMcpProxy(['x'], { agent: 'a', ...flags, allowOrigin: 'allowOrigin' in flags ? [...flags.allowOrigin] : undefined }, environment)).toThrow(message);
    });
  });
});

// Refusals through runMain (in-process): exit code 1 and the message on stderr. The binary
// itself starting, proxying and exiting is test/e2e/mcp-proxy.test.ts.
describe('guardctl mcp-proxy refusing to start', () => {
  const AGENT = 'desktop-assistant';
  const cli = (args: string[]) => runCliInProcess(args, { cwd: tmpdir() });

  it('does not start without its controls: exit 1 and a message on stderr', async () => {
    // Port 9 on this machine: nothing listens, the guard server is unreachable.
    const result = await cli(['mcp-proxy', '--agent', AGENT, '--server', 'http://127.0.0.1:9', '--', process.execPath, '-e', '']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('could not load the controls of agent "desktop-assistant"');
    expect(result.stdout).toBe('');
  });

  it('refuses a command line without a server to guard', async () => {
    const result = await cli(['mcp-proxy', '--agent', AGENT, '--server', 'http://127.0.0.1:9']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('no MCP server to guard');
  });
});
