/**
 * Issue #17 item 3: `control(fn)` under agent frameworks. Every framework calls a tool
 * with more than one argument (the AI SDK passes `(input, {toolCallId, messages})`); the
 * step's input is the first argument unless `input` says otherwise, and a selector that
 * finds nothing in a step its control is scoped to is visible (a warning once per control,
 * `selector_missing` in metrics and stats) instead of silently allowing.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ControlViolationError, init, type GuardAgent, type GuardLogger } from '../../src/sdk/index.js';
import { addControl, startRealServer, type RunningServer } from './real-server.js';

function recordingLogger(): GuardLogger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (m) => lines.push(`info ${m}`), warn: (m) => lines.push(`warn ${m}`) };
}

/** What a framework passes as the second argument: the whole conversation. */
const frameworkOptions = {
  toolCallId: 'call-1',
  messages: [{ role: 'user', content: 'the customer record of Jane Roe, card 4111 1111 1111 1111' }],
};

let server: RunningServer;
const agents: GuardAgent[] = [];
const sentBodies: string[] = [];

/** fetch that remembers every request body the SDK sends. */
const recordingFetch: typeof fetch = async (input, requestInit) => {
  if (typeof requestInit?.body === 'string') sentBodies.push(requestInit.body);
  return fetch(input, requestInit);
};

async function start(logger: GuardLogger = recordingLogger()): Promise<GuardAgent> {
  const agent = await init({ agentName: 'sql-bot', serverUrl: server.url, refreshIntervalSeconds: 0, logger, fetch: recordingFetch });
  agents.push(agent);
  return agent;
}

beforeEach(async () => {
  sentBodies.length = 0;
  server = await startRealServer();
  await server.client.initAgent({ agent_name: 'sql-bot' });
  for (const execution of ['sdk', 'server'] as const) {
    await addControl(server.client, 'sql-bot', `block-drop-${execution}`, {
      execution,
      scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
      action: { decision: 'deny' },
    });
  }
});

afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.shutdown();
  await server.close();
});

describe('control() with more than one argument', () => {
  it('checks the first argument: a DROP TABLE passed as a framework passes it is denied', async () => {
    const agent = await start();
    const runSql = vi.fn(async (args: { query: string }, _options: typeof frameworkOptions) => `ran ${args.query}`);
    const guarded = agent.control(runSql, { stepName: 'run_sql', type: 'tool' });
    await expect(guarded({ query: 'DROP TABLE orders' }, frameworkOptions)).rejects.toBeInstanceOf(ControlViolationError);
    expect(runSql).not.toHaveBeenCalled();
  });

  it('sends the first argument to the server, never the conversation in the others', async () => {
    const agent = await start();
    // The sdk control is disabled here so that the server's control decides.
    const sdkControl = agent.controls.find((c) => c.name === 'block-drop-sdk')!;
    await server.client.patchControl(sdkControl.control_id, { enabled: false });
    await agent.refresh();
    const guarded = agent.control(async (args: { query: string }, _o: typeof frameworkOptions) => `ran ${args.query}`, {
      stepName: 'run_sql',
      type: 'tool',
    });
    const error = await guarded({ query: 'drop table orders' }, frameworkOptions).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ControlViolationError);
    expect((error as ControlViolationError).controlName).toBe('block-drop-server');
    const evaluations = sentBodies.filter((b) => b.includes('"stage"'));
    expect(evaluations.length).toBeGreaterThan(0);
    for (const body of evaluations) {
      expect(body).not.toContain('Jane Roe');
      expect(JSON.parse(body).step.input).toEqual({ query: 'drop table orders' });
    }
  });

  it('checks what the input option picks out of the arguments', async () => {
    const agent = await start();
    const guarded = agent.control(async (_ctx: { user: string }, args: { query: string }) => `ran ${args.query}`, {
      stepName: 'run_sql',
      type: 'tool',
      input: (_ctx, args) => args,
    });
    await expect(guarded({ user: 'u1' }, { query: 'DROP TABLE orders' })).rejects.toBeInstanceOf(ControlViolationError);
    await expect(guarded({ user: 'u1' }, { query: 'select 1' })).resolves.toBe('ran select 1');
  });
});

describe('a selector that finds nothing', () => {
  it('warns once per control, in the SDK, for sdk and server controls alike', async () => {
    const logger = recordingLogger();
    const agent = await start(logger);
    // The tool's argument is named `sql`, not `query`: neither control can see the statement.
    const guarded = agent.control(async (args: { sql: string }) => `ran ${args.sql}`, { stepName: 'run_sql', type: 'tool' });
    await guarded({ sql: 'select 1' });
    await guarded({ sql: 'select 2' });
    const warnings = logger.lines.filter((l) => l.startsWith('warn') && l.includes('found nothing'));
    expect(warnings).toHaveLength(2);
    expect(warnings.some((w) => w.includes('"block-drop-sdk"') && w.includes('input.query') && w.includes('"run_sql"'))).toBe(true);
    expect(warnings.some((w) => w.includes('"block-drop-server"'))).toBe(true);
  });

  it('does not warn when the selected field is there', async () => {
    const logger = recordingLogger();
    const agent = await start(logger);
    await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
    expect(logger.lines.filter((l) => l.includes('found nothing'))).toEqual([]);
  });

  it('is counted as selector_missing in the server metrics and stats', async () => {
    const agent = await start();
    await agent.check({ type: 'tool', name: 'run_sql', input: { sql: 'select 1' } }, 'pre');
    await agent.check({ type: 'tool', name: 'run_sql', input: { sql: 'select 2' } }, 'pre');
    await agent.flushEvents();
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    // Two steps, each missed by both controls: the server's own evaluations and the SDK's events.
    expect(metrics).toMatch(/guard_selector_missing_total\{agent="sql-bot",control="block-drop-server"\} 2/);
    expect(metrics).toMatch(/guard_selector_missing_total\{agent="sql-bot",control="block-drop-sdk"\} 2/);
    await vi.waitFor(async () => {
      const stats = await server.client.stats({ agent_name: 'sql-bot', time_range: '1h' });
      expect(stats.totals).toMatchObject({ executions: 4, non_matches: 4, selector_missing: 4 });
      const byName = Object.fromEntries(stats.controls.map((c) => [c.control_name, c.selector_missing]));
      expect(byName).toEqual({ 'block-drop-sdk': 2, 'block-drop-server': 2 });
    }, { timeout: 30_000 });
  });
});
