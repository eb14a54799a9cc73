import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ApiError,
  ConnectionError,
  GuardAgent,
  ControlSteerError,
  ControlViolationError,
  GuardUnavailableError,
  init,
  type GuardLogger,
  type InitOptions,
} from '../../src/sdk/index.js';
import { addControl, seedSupportBot, startRealServer, type RunningServer } from './real-server.js';

function recordingLogger(): GuardLogger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (m) => lines.push(`info ${m}`), warn: (m) => lines.push(`warn ${m}`) };
}

let server: RunningServer;
let ids: Record<string, number>;
const agents: GuardAgent[] = [];

async function start(options: Partial<InitOptions> = {}): Promise<GuardAgent> {
  const agent = await init({
    agentName: 'support-bot',
    serverUrl: server.url,
    refreshIntervalSeconds: 0,
    logger: recordingLogger(),
    ...options,
  });
  agents.push(agent);
  return agent;
}

beforeEach(async () => {
  server = await startRealServer();
  ids = await seedSupportBot(server.client);
});

afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.shutdown();
  await server.close();
});

describe('init', () => {
  it('registers the agent with its steps and loads its linked controls', async () => {
    const agent = await start({
      agentName: '  Support-Bot ',
      agentDescription: 'answers customers',
      steps: [{ type: 'tool', name: 'run_sql', description: 'runs a read-only query' }],
    });
    expect(agent.agentName).toBe('support-bot');
    const stored = await server.client.getAgent('support-bot');
    expect(stored.agent_description).toBe('answers customers');
    expect(stored.steps.map((s) => s.name)).toEqual(['run_sql']);
    expect(agent.controls.map((c) => c.name).sort()).toEqual(
      ['block-drop', 'deny-secret-output', 'steer-ssn', 'warn-select-star'],
    );
  });

  it('rejects when the server cannot be reached', async () => {
    await server.close();
    const error = await start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    // A pooled keep-alive socket to the stopped server reports the close; a new one is refused.
    expect((error as ConnectionError).code).toMatch(/ECONNREFUSED|UND_ERR_SOCKET/);
    expect((error as Error).message).toContain(server.url);
  });
});

describe('decisions through control()', () => {
  it('allows a harmless call and returns its output unchanged', async () => {
    const agent = await start();
    const runSql = vi.fn(async (args: { query: string }) => `rows for ${args.query}`);
    const guarded = agent.control(runSql, { stepName: 'run_sql', type: 'tool' });
    await expect(guarded({ query: 'select 1' })).resolves.toBe('rows for select 1');
    expect(runSql).toHaveBeenCalledWith({ query: 'select 1' });
  });

  it('denies before the call with the control name, message and metadata (sdk control)', async () => {
    const agent = await start();
    const runSql = vi.fn(async (_args: { query: string }) => 'never');
    const guarded = agent.control(runSql, { stepName: 'run_sql', type: 'tool' });
    const error = await guarded({ query: 'DROP TABLE users' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ControlViolationError);
    const violation = error as ControlViolationError;
    expect(violation.controlName).toBe('block-drop');
    expect(violation.controlId).toBe(ids['block-drop']);
    expect(violation.metadata).toEqual({ severity: 'high' });
    // What matched is masked in the message the agent sees, as everywhere else.
    expect(violation.detail).toContain('pattern matched "D…E"');
    expect(violation.detail).not.toContain('DROP TABLE');
    expect(violation.result.decision).toBe('deny');
    expect(runSql).not.toHaveBeenCalled();
  });

  it('denies after the call when the output matches a server control', async () => {
    const agent = await start();
    const runSql = vi.fn(async (_args: { query: string }) => 'the secret is 42');
    const guarded = agent.control(runSql, { stepName: 'run_sql', type: 'tool' });
    const error = await guarded({ query: 'select answer' }).catch((e: unknown) => e);
    expect(runSql).toHaveBeenCalledOnce();
    expect(error).toBeInstanceOf(ControlViolationError);
    expect((error as ControlViolationError).controlName).toBe('deny-secret-output');
    expect((error as ControlViolationError).metadata).toEqual({ reason: 'secrets must not leave the database' });
  });

  it('steers a model call with the steering context (server control)', async () => {
    const agent = await start();
    const chat = vi.fn(async (prompt: string) => `reply to ${prompt}`);
    const guarded = agent.control(chat, { stepName: 'chat', type: 'llm' });
    const error = await guarded('my ssn is 123-45-6789').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ControlSteerError);
    const steer = error as ControlSteerError;
    expect(steer.controlName).toBe('steer-ssn');
    expect(steer.steeringContext).toEqual({ message: 'remove the social security number', required_actions: ['redact_pii'] });
    expect(steer.requiredActions).toEqual(['redact_pii']);
    expect(chat).not.toHaveBeenCalled();
    await expect(guarded('my ssn is on file')).resolves.toBe('reply to my ssn is on file');
  });

  it('logs a warn match and goes on', async () => {
    const logger = recordingLogger();
    const agent = await start({ logger });
    const guarded = agent.control(async (_args: { query: string }) => 'ok', { stepName: 'run_sql', type: 'tool' });
    await expect(guarded({ query: 'SELECT * FROM orders' })).resolves.toBe('ok');
    expect(logger.lines.some((l) => l.startsWith('warn') && l.includes('warn-select-star'))).toBe(true);
  });

  it('uses the function name as the step name by default', async () => {
    const agent = await start();
    async function run_sql(_args: { query: string }): Promise<string> {
      return 'ran';
    }
    const guarded = agent.control(run_sql, { type: 'tool' });
    await expect(guarded({ query: 'drop table x' })).rejects.toBeInstanceOf(ControlViolationError);
  });
});

describe('decisions through check()', () => {
  it('returns the result for allow and raises for deny and steer', async () => {
    const agent = await start();
    const allowed = await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
    expect(allowed.decision).toBe('allow');
    await expect(agent.check({ type: 'tool', name: 'run_sql', input: { query: 'drop table t' } }, 'pre'))
      .rejects.toBeInstanceOf(ControlViolationError);
    await expect(agent.check({ type: 'llm', name: 'chat', input: 'ssn 123-45-6789' }, 'pre'))
      .rejects.toBeInstanceOf(ControlSteerError);
  });

  it('merges sdk and server results: a server deny beats a local steer', async () => {
    await addControl(server.client, 'support-bot', 'steer-sleep', {
      execution: 'sdk',
      scope: { step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)sleep\\(' } },
      action: { decision: 'steer', steering_context: { message: 'no sleeping queries' } },
    });
    await addControl(server.client, 'support-bot', 'deny-grant', {
      execution: 'server',
      scope: { step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)\\bgrant\\b' } },
      action: { decision: 'deny' },
    });
    const agent = await start();
    const both = await agent.evaluate({ type: 'tool', name: 'run_sql', input: { query: 'GRANT ALL; select sleep(5)' } }, 'pre');
    expect(both.decision).toBe('deny');
    expect(both.matches.map((m) => m.control_name).sort()).toEqual(['deny-grant', 'steer-sleep']);
    const onlySteer = await agent.evaluate({ type: 'tool', name: 'run_sql', input: { query: 'select sleep(5)' } }, 'pre');
    expect(onlySteer.decision).toBe('steer');
    expect(onlySteer.steering_context?.message).toBe('no sleeping queries');
    const error = await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'grant x' } }, 'pre').catch((e: unknown) => e);
    expect((error as ControlViolationError).controlName).toBe('deny-grant');
  });

  it('runs pii and secrets in the agent\'s process (execution: sdk), with the server gone', async () => {
    await addControl(server.client, 'support-bot', 'sdk-pii', {
      execution: 'sdk',
      scope: { step_names: ['send_sms'], stages: ['pre'] },
      selector: { path: 'input' },
      evaluator: { name: 'pii', config: { kinds: ['phone', 'credit_card'], phone_region: 'US' } },
      action: { decision: 'deny' },
    });
    await addControl(server.client, 'support-bot', 'sdk-secrets', {
      execution: 'sdk',
      scope: { step_names: ['send_sms'], stages: ['pre'] },
      selector: { path: 'input' },
      evaluator: { name: 'secrets', config: { kinds: ['aws_access_key'] } },
      action: { decision: 'deny' },
    });
    const agent = await start();
    await server.close();
    const sms = (text: string) => agent.check({ type: 'tool', name: 'send_sms', input: { text } }, 'pre');
    expect((await sms('order 1234 5678 9012 3456 ships today')).decision).toBe('allow');
    const phone = await sms('call me at (415) 555-2671').catch((e: unknown) => e);
    expect((phone as ControlViolationError).controlName).toBe('sdk-pii');
    expect((phone as ControlViolationError).detail).toBe('found phone (1) "(…1"');
    const key = await sms('key AKIAQWERTYUIOPASDF7Z').catch((e: unknown) => e);
    expect((key as ControlViolationError).controlName).toBe('sdk-secrets');
  });

  it('sends disabled controls nowhere', async () => {
    await server.client.patchControl(ids['block-drop']!, { enabled: false });
    const agent = await start();
    const result = await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'drop table t' } }, 'pre');
    expect(result.decision).toBe('allow');
  });
});

describe('json and sql controls with execution: sdk', () => {
  it('run in the agent process: a hidden DROP and malformed arguments are denied before the call', async () => {
    await addControl(server.client, 'support-bot', 'sdk-sql', {
      execution: 'sdk',
      scope: { step_names: ['query_db'], stages: ['pre'] },
      selector: { path: 'input.sql' },
      evaluator: { name: 'sql', config: { blocked_operations: ['drop', 'truncate'] } },
      action: { decision: 'deny' },
    });
    await addControl(server.client, 'support-bot', 'sdk-json', {
      execution: 'sdk',
      scope: { step_names: ['query_db'], stages: ['pre'] },
      selector: { path: 'input' },
      evaluator: { name: 'json', config: { schema: { type: 'object', properties: { sql: { type: 'string' }, limit: { type: 'integer', maximum: 100 } }, additionalProperties: false } } },
      action: { decision: 'deny' },
    });
    const agent = await start();
    const queryDb = vi.fn(async (_args: { sql: string; limit?: number }) => 'rows');
    const guarded = agent.control(queryDb, { stepName: 'query_db', type: 'tool' });
    expect(await guarded({ sql: "SELECT 'DROP TABLE x'", limit: 10 })).toBe('rows');
    const hidden = await guarded({ sql: 'SELECT 1; dRoP/**/TABLE users' }).catch((e: unknown) => e);
    expect(hidden).toBeInstanceOf(ControlViolationError);
    expect((hidden as ControlViolationError).controlName).toBe('sdk-sql');
    expect((hidden as ControlViolationError).detail).toContain('statement 2: drop is blocked');
    const malformed = await guarded({ sql: 'SELECT 1', limit: 5000 }).catch((e: unknown) => e);
    expect(malformed).toBeInstanceOf(ControlViolationError);
    expect((malformed as ControlViolationError).controlName).toBe('sdk-json');
    expect((malformed as ControlViolationError).detail).toContain('input.limit: must be <= 100');
    expect(queryDb).toHaveBeenCalledTimes(1);
  });
});

describe('refresh', () => {
  it('picks up a newly linked control', async () => {
    const agent = await start();
    const step = { type: 'tool' as const, name: 'lookup_order', input: { id: 'ORD-1' } };
    expect((await agent.check(step, 'pre')).decision).toBe('allow');
    await addControl(server.client, 'support-bot', 'deny-orders', {
      execution: 'sdk',
      scope: { step_names: ['lookup_order'] },
      selector: { path: 'input.id' },
      evaluator: { name: 'regex', config: { pattern: '^ORD-' } },
      action: { decision: 'deny' },
    });
    const controls = await agent.refresh();
    expect(controls.map((c) => c.name)).toContain('deny-orders');
    await expect(agent.check(step, 'pre')).rejects.toBeInstanceOf(ControlViolationError);
  });

  it('keeps the previous set when the server is gone', async () => {
    const agent = await start();
    await server.close();
    const error = await agent.refresh().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(agent.lastRefreshError).toBe(error);
    expect(agent.controls).toHaveLength(4);
    // The sdk control still runs with no server at all.
    await expect(agent.check({ type: 'tool', name: 'run_sql', input: { query: 'drop table t' } }, 'pre'))
      .rejects.toBeInstanceOf(ControlViolationError);
  });

  it('refreshes in the background and keeps going after a failure', async () => {
    const logger = recordingLogger();
    const agent = await start({ refreshIntervalSeconds: 0.05, logger });
    await addControl(server.client, 'support-bot', 'deny-orders', {
      execution: 'sdk',
      scope: { step_names: ['lookup_order'] },
      selector: { path: 'input.id' },
      evaluator: { name: 'regex', config: { pattern: '^ORD-' } },
      action: { decision: 'deny' },
    });
    await vi.waitFor(() => expect(agent.controls.map((c) => c.name)).toContain('deny-orders'), { timeout: 30_000 });
    await server.close();
    await vi.waitFor(() => expect(logger.lines.some((l) => l.includes('refresh failed, keeping 5 controls'))).toBe(true), { timeout: 30_000 });
    expect(agent.controls).toHaveLength(5);
  });
});

describe('failure semantics', () => {
  it('fails closed when the server is needed and down', async () => {
    const agent = await start();
    await server.close();
    const error = await agent.check({ type: 'llm', name: 'chat', input: 'hello' }, 'pre').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GuardUnavailableError);
    expect((error as GuardUnavailableError).cause).toBeInstanceOf(ConnectionError);
    expect((error as Error).message).toContain(`${server.url}/api/v1/evaluation`);
  });

  it('fails open when configured, with a warning', async () => {
    const logger = recordingLogger();
    const agent = await start({ failMode: 'open', logger });
    await server.close();
    const result = await agent.check({ type: 'llm', name: 'chat', input: 'hello' }, 'pre');
    expect(result.decision).toBe('allow');
    expect(logger.lines.some((l) => l.startsWith('warn') && l.includes('failMode is open'))).toBe(true);
  });

  it('needs no server for steps that no server control is scoped to', async () => {
    const agent = await start();
    await server.close();
    const guarded = agent.control(async (_a: { query: string }) => 'ok', { stepName: 'run_sql', type: 'tool' });
    // run_sql pre has only sdk controls in scope; its post stage has a server control.
    await expect(agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre')).resolves.toMatchObject({ decision: 'allow' });
    await expect(agent.check({ type: 'tool', name: 'lookup_order', input: {} }, 'post')).resolves.toMatchObject({ decision: 'allow' });
    await expect(guarded({ query: 'select 1' })).rejects.toBeInstanceOf(GuardUnavailableError);
  });

  it('a server 404 for an unknown agent is not a pass', async () => {
    const agent = await start();
    // An agent the server does not know (for example after its database was reset).
    const ghost = new GuardAgent(
      { agentName: 'ghost-bot', serverUrl: server.url, events: false, logger: recordingLogger() },
      agent.controls,
    );
    const error = await ghost.check({ type: 'llm', name: 'chat', input: 'hi' }, 'pre').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GuardUnavailableError);
    expect((error as GuardUnavailableError).cause).toBeInstanceOf(ApiError);
    expect(((error as GuardUnavailableError).cause as ApiError).status).toBe(404);
    await ghost.shutdown();
  });
});

describe('events', () => {
  it('delivers events of in-process evaluations to the server', async () => {
    const agent = await start({ eventFlushIntervalSeconds: 60 });
    const guarded = agent.control(async (_a: { query: string }) => 'ok', { stepName: 'run_sql', type: 'tool' });
    await expect(guarded({ query: 'drop table t' })).rejects.toBeInstanceOf(ControlViolationError);
    await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
    // The match, and one rollup for each control's two non-matches and the other's one.
    expect(agent.pendingEvents).toBe(3);
    await agent.shutdown();
    expect(agent.pendingEvents).toBe(0);
    // All four are counted in the stats (non-matches as per-minute rollups) ...
    await vi.waitFor(async () => {
      const { totals } = await server.client.stats({ agent_name: 'support-bot', time_range: '1h' });
      expect(totals).toMatchObject({ executions: 4, matches: 1, non_matches: 3, errors: 0 });
    }, { timeout: 30_000 });
    // ... and the match is also stored as a single event.
    const { events } = await server.client.queryEvents({ agent_name: 'support-bot', matched: true, limit: 100 });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      control_id: ids['block-drop'], control_name: 'block-drop', action: 'deny', check_stage: 'pre', applies_to: 'tool',
      metadata: { source: 'sdk', step_name: 'run_sql' },
    });
  });

  it('sends a batch as soon as it is full', async () => {
    const agent = await start({ eventBatchSize: 2, eventFlushIntervalSeconds: 60 });
    // Two matches fill the batch (non-matches wait in their rollups for the interval).
    for (let i = 0; i < 2; i++) await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'drop table t' } }, 'pre').catch(() => undefined);
    await vi.waitFor(async () => {
      const { totals } = await server.client.stats({ agent_name: 'support-bot', time_range: '1h' });
      expect(totals.matches).toBe(2);
    }, { timeout: 30_000 });
    expect(agent.pendingEvents).toBe(1);
  });

  it('keeps events for retry while the server is down', async () => {
    const logger = recordingLogger();
    const agent = await start({ eventFlushIntervalSeconds: 60, logger });
    await server.close();
    await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
    await agent.flushEvents();
    expect(agent.pendingEvents).toBe(2);
    expect(logger.lines.some((l) => l.includes('could not send events (2 kept for retry)'))).toBe(true);
  });
});

describe('shadow controls', () => {
  it('never raises for a shadow control, in-process or on the server, and returns what it would have done', async () => {
    // Both halves in shadow mode: an in-process deny and a server-side steer.
    const shadowSdk = await addControl(server.client, 'support-bot', 'shadow-no-delete', {
      mode: 'shadow',
      execution: 'sdk',
      scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)\\bdelete\\s+from\\b' } },
      action: { decision: 'deny' },
    });
    await addControl(server.client, 'support-bot', 'shadow-steer-delete', {
      mode: 'shadow',
      scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)\\bdelete\\b' } },
      action: { decision: 'steer', steering_context: { message: 'archive instead' } },
    });
    const logger = recordingLogger();
    const agent = await start({ eventFlushIntervalSeconds: 60, logger });
    const runSql = vi.fn(async (_a: { query: string }) => 'deleted');
    const guarded = agent.control(runSql, { stepName: 'run_sql', type: 'tool' });
    await expect(guarded({ query: 'DELETE FROM orders' })).resolves.toBe('deleted');
    expect(runSql).toHaveBeenCalledOnce();

    const result = await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'DELETE FROM orders' } }, 'pre');
    expect(result).toMatchObject({ decision: 'allow', is_safe: true, steering_context: null });
    expect(result.matches).toEqual([]);
    expect(result.shadow_matches.map((m) => [m.control_name, m.action])).toEqual([
      ['shadow-no-delete', 'deny'],
      ['shadow-steer-delete', 'steer'],
    ]);
    // A real deny next to the shadow ones still raises.
    await expect(guarded({ query: 'DELETE FROM orders; DROP TABLE orders' })).rejects.toBeInstanceOf(ControlViolationError);
    expect(logger.lines.filter((l) => l.startsWith('warn'))).toEqual([]);

    // The in-process shadow control reports through events, marked shadow, with its set revision.
    await agent.shutdown();
    await vi.waitFor(async () => {
      const { stats } = await server.client.controlStats(shadowSdk, { time_range: '1h' });
      expect(stats).toMatchObject({ shadow_executions: 3, would_deny: 3 });
    }, { timeout: 30_000 });
    const { events } = await server.client.queryEvents({ control_ids: [shadowSdk], matched: true, limit: 100 });
    expect(events).toHaveLength(3);
    const revision = (await server.client.getAgentControls('support-bot')).set_revision;
    expect(revision).toBeGreaterThan(0);
    expect(events.every((e) => e.mode === 'shadow' && e.action === 'deny' && e.set_revision === revision)).toBe(true);
  });
});

describe('sessions in events', () => {
  it('the events of in-process controls carry the check\'s session, null without one', async () => {
    const local = await addControl(server.client, 'support-bot', 'sdk-flag-delete', {
      execution: 'sdk',
      scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)\\bdelete\\b' } },
      action: { decision: 'warn' },
    });
    const agent = await start({ eventFlushIntervalSeconds: 60, sessionId: 'agent-default' });
    const step = { type: 'tool' as const, name: 'run_sql', input: { query: 'DELETE FROM carts' } };
    await agent.check(step, 'pre');
    await agent.check(step, 'pre', { sessionId: 'per-call' });
    const plain = await start({ eventFlushIntervalSeconds: 60 });
    await plain.check(step, 'pre');
    await agent.shutdown();
    await plain.shutdown();
    await vi.waitFor(async () => {
      expect((await server.client.queryEvents({ control_ids: [local], matched: true, limit: 10 })).total).toBe(3);
    }, { timeout: 30_000 });
    const { events } = await server.client.queryEvents({ control_ids: [local], matched: true, limit: 10 });
    expect(events.map((e) => e.session_id).sort()).toEqual(['agent-default', 'per-call', null].sort());
    expect((await server.client.queryEvents({ session_id: 'per-call', limit: 10 })).events.map((e) => e.control_id)).toContain(local);
  });
});
