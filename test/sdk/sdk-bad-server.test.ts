/**
 * The SDK against servers that misbehave: silence, HTML, cut-off JSON, the wrong shape.
 * None of them may let a step pass by accident.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import type { ControlRecord } from '../../src/model/index.js';
import { LEARN_RETRY_MS } from '../../src/sdk/agent.js';
import {
  ConnectionError,
  GuardAgent,
  GuardUnavailableError,
  ResponseShapeError,
  init,
  type GuardLogger,
} from '../../src/sdk/index.js';
import { sendJson, startFakeServer, type FakeServer } from '../client/fake-server.js';

const quiet: GuardLogger = { info: () => undefined, warn: () => undefined };

/** One server-side control on llm steps: every model call needs the server. */
const serverControl: ControlRecord = {
  control_id: 1,
  name: 'server-steer',
  enabled: true,
  data: {
    enabled: true,
    execution: 'server',
    scope: { step_types: ['llm'] },
    selector: { path: 'input' },
    evaluator: { name: 'regex', config: { pattern: 'x' } },
    action: { decision: 'steer', steering_context: { message: 'm' } },
  },
  managed_by: null,
  source: null,
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
};

let server: FakeServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

function agentFor(url: string, failMode: 'closed' | 'open' = 'closed', timeoutMs = 30_000): GuardAgent {
  return new GuardAgent(
    { agentName: 'bot', serverUrl: url, failMode, timeoutMs, events: false, logger: quiet },
    [serverControl],
  );
}

const garbage: Array<[string, (res: ServerResponse) => void]> = [
  ['an HTML page with status 200', (res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<html><body>maintenance</body></html>');
  }],
  ['truncated JSON', (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"is_safe":true,"decision":"al');
  }],
  ['JSON of the wrong shape', (res) => sendJson(res, 200, { is_safe: true, decision: 'allow' })],
  ['a decision the API does not have', (res) => sendJson(res, 200, {
    is_safe: true, decision: 'maybe', confidence: 1, steering_context: null, matches: [], errors: [], non_matches: [],
  })],
];

describe('garbage evaluation answers', () => {
  for (const [what, respond] of garbage) {
    it(`fails closed on ${what}, naming the endpoint`, async () => {
      server = await startFakeServer((_req, res) => respond(res));
      const error = await agentFor(server.url).check({ type: 'llm', name: 'chat', input: 'x' }, 'pre').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GuardUnavailableError);
      expect((error as GuardUnavailableError).cause).toBeInstanceOf(ResponseShapeError);
      expect((error as Error).message).toContain('POST /evaluation');
    });
  }

  it('lets the step go on with failMode open', async () => {
    server = await startFakeServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html></html>');
    });
    const result = await agentFor(server.url, 'open').check({ type: 'llm', name: 'chat', input: 'x' }, 'pre');
    expect(result.decision).toBe('allow');
  });
});

describe('timeouts', () => {
  it('a server that never answers fails the check closed after timeoutMs', async () => {
    server = await startFakeServer(() => undefined);
    const error = await agentFor(server.url, 'closed', 150)
      .check({ type: 'llm', name: 'chat', input: 'x' }, 'pre')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GuardUnavailableError);
    const cause = (error as GuardUnavailableError).cause as ConnectionError;
    expect(cause).toBeInstanceOf(ConnectionError);
    expect(cause.code).toBe('TIMEOUT');
  });

  it("a server that never answers GET /evaluators is asked once: the next read gets the failure at once, not another wait", async () => {
    server = await startFakeServer(() => undefined);
    const agent = agentFor(server.url, 'closed', 150);
    // The request's own timeout is an AbortSignal's; only the wait before asking again is faked.
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    onTestFinished(() => void vi.useRealTimers());
    const first = await agent.learnServerEvaluators().catch((e: unknown) => e);
    expect(first).toBeInstanceOf(ConnectionError);
    // An HTTP gateway's next session reads them as it starts: it must not wait out the timeout again.
    const second = await agent.learnServerEvaluators().catch((e: unknown) => e);
    expect(second).toBe(first);
    expect(server.seen.filter((r) => r.url === '/api/v1/evaluators')).toHaveLength(1);
    expect(agent.evaluatorKind('some_server_plugin')).toBe('unknown');
    // LEARN_RETRY_MS later it asks again.
    vi.advanceTimersByTime(LEARN_RETRY_MS);
    await agent.learnServerEvaluators().catch(() => undefined);
    expect(server.seen.filter((r) => r.url === '/api/v1/evaluators')).toHaveLength(2);
  });

  it("reads the server's evaluators again after each refresh: a guard server restarted with a plugin that now counts is taken at its word", async () => {
    let counts = false;
    server = await startFakeServer((req, res) => {
      if (req.url === '/api/v1/evaluators') sendJson(res, 200, { evaluators: [{ name: 'tally', description: 'd', config_schema: {}, counts }] });
      else sendJson(res, 200, { agent_name: 'bot', controls: [], set_revision: 1 });
    });
    const agent = agentFor(server.url);
    await agent.learnServerEvaluators();
    expect(agent.evaluatorKind('tally')).toBe('stateless');
    const version = agent.evaluatorKindsVersion;
    await agent.refresh();
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Nothing changed: what was derived from the kinds stays.
    expect(agent.evaluatorKindsVersion).toBe(version);
    counts = true;
    await agent.refresh();
    await expect.poll(() => agent.evaluatorKind('tally')).toBe('counting');
    expect(agent.evaluatorKindsVersion).toBe(version + 1);
  });

  it('init against a silent server rejects instead of hanging', async () => {
    server = await startFakeServer(() => undefined);
    const error = await init({ agentName: 'bot', serverUrl: server.url, timeoutMs: 150, logger: quiet }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).code).toBe('TIMEOUT');
  });
});

describe('garbage refresh answers', () => {
  it('keep the previous controls and name the problem', async () => {
    server = await startFakeServer((_req, res) => sendJson(res, 200, { agent_name: 'bot', controls: [{ control_id: 'one' }] }));
    const agent = agentFor(server.url);
    const error = await agent.refresh().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseShapeError);
    expect((error as Error).message).toContain('GET /agents/{agent_name}/controls');
    expect(agent.controls).toEqual([serverControl]);
  });
});

describe('controls that cannot run here', () => {
  it('an sdk control with an evaluator this process lacks fails its steps closed', async () => {
    const record: ControlRecord = {
      ...serverControl,
      control_id: 2,
      name: 'needs-plugin',
      data: {
        ...serverControl.data!,
        execution: 'sdk',
        evaluator: { name: 'ai_vendor.scorer', config: { metric: 'toxicity', operator: 'gt', target_value: 0.5 } },
        action: { decision: 'deny' },
      },
    };
    const warnings: string[] = [];
    const logger: GuardLogger = { info: () => undefined, warn: (m) => warnings.push(m) };
    const closed = new GuardAgent({ agentName: 'bot', serverUrl: 'http://127.0.0.1:9', events: false, logger }, [record]);
    expect(warnings.some((w) => w.includes('needs-plugin'))).toBe(true);
    await expect(closed.check({ type: 'llm', name: 'chat', input: 'x' }, 'pre')).rejects.toThrow(/needs-plugin/);
    // Steps outside its scope are unaffected.
    await expect(closed.check({ type: 'tool', name: 'search', input: 'x' }, 'pre')).resolves.toMatchObject({ decision: 'allow' });
    const open = new GuardAgent(
      { agentName: 'bot', serverUrl: 'http://127.0.0.1:9', events: false, logger, failMode: 'open' }, [record],
    );
    await expect(open.check({ type: 'llm', name: 'chat', input: 'x' }, 'pre')).resolves.toMatchObject({ decision: 'allow' });
  });
});

describe('bad steps from plain JavaScript callers', () => {
  it('are rejected with a TypeError, never allowed', async () => {
    const agent = agentFor('http://127.0.0.1:9');
    const bad = { type: 'function', name: 'x', input: 1 } as unknown as Parameters<GuardAgent['check']>[0];
    await expect(agent.check(bad, 'pre')).rejects.toThrow(/step.type must be/);
    await expect(agent.check({ type: 'tool', name: 'x', input: 1 }, 'during' as 'pre')).rejects.toThrow(/stage must be/);
    await expect(agent.check({ type: 'tool', name: '', input: 1 }, 'pre')).rejects.toThrow(/step.name/);
  });
});
