import { describe, expect, it } from 'vitest';
import { planMcpProxy } from '../../cli/commands/mcp-proxy.js';
import { UserError } from '../../src/errors.js';

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
  ];
  for (const [what, command, flags, message] of refusals) {
    it(`refuses ${what}`, () => {
      expect(() => planMcpProxy(command, flags)).toThrow(UserError);
      expect(() => planMcpProxy(command, flags)).toThrow(message);
    });
  }
});
