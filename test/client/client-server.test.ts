/** Every GuardClient method against the real server (in-process, 127.0.0.1, :memory: SQLite). */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../src/errors.js';
import type { GuardClient } from '../../src/client/index.js';
import type { ControlDataInput } from '../../src/model/index.js';
import { startRealServer, type RunningServer } from '../sdk/real-server.js';

const denyDrop: ControlDataInput = {
  scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: '(?i)drop table' } },
  action: { decision: 'deny' },
};

let server: RunningServer;
let client: GuardClient;
beforeAll(async () => {
  server = await startRealServer();
  client = server.client;
});
afterAll(async () => {
  await server.close();
});

describe('GuardClient against the server', () => {
  it('system endpoints', async () => {
    expect((await client.health()).status).toBe('healthy');
    const names = (await client.listEvaluators()).map((e) => e.name);
    expect(names).toEqual(expect.arrayContaining(['regex', 'list']));
  });

  it('control lifecycle: create, read, patch, data, validate, delete', async () => {
    const { control_id: id } = await client.createControl({ name: 'lifecycle' });
    expect((await client.getControl(id)).data).toBeNull();
    await client.putControlData(id, denyDrop);
    expect((await client.getControlData(id)).action.decision).toBe('deny');
    await client.patchControl(id, { name: 'lifecycle-2', enabled: false });
    const record = await client.getControl(id);
    expect(record).toMatchObject({ name: 'lifecycle-2', enabled: false });
    await expect(client.validateControlData(denyDrop)).resolves.toEqual({ success: true });
    const invalid = await client.validateControlData({ ...denyDrop, action: { decision: 'block' } }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(ApiError);
    expect((invalid as ApiError).status).toBe(422);
    expect((invalid as ApiError).problem?.errors?.map((e) => e.field)).toContain('data.action.decision');
    const duplicate = await client.createControl({ name: 'lifecycle-2' }).catch((e: unknown) => e);
    expect((duplicate as ApiError).status).toBe(409);
    await client.deleteControl(id);
    expect(((await client.getControl(id).catch((e: unknown) => e)) as ApiError).status).toBe(404);
  });

  it('pages and lists all controls', async () => {
    for (let i = 0; i < 5; i++) await client.createControl({ name: `page-${i}`, data: denyDrop });
    const first = await client.listControls({ limit: 2 });
    expect(first.controls).toHaveLength(2);
    expect(first.pagination.has_more).toBe(true);
    const all = await client.listAllControls(2);
    expect(all.map((c) => c.name)).toEqual(expect.arrayContaining(['page-0', 'page-4']));
    expect(all).toHaveLength(first.pagination.total);
  });

  it('agents: register, read, patch, link, evaluate, unlink', async () => {
    const reg = await client.initAgent({ agent_name: 'Client-Bot', steps: [{ type: 'tool', name: 'run_sql' }] });
    expect(reg).toMatchObject({ created: true, agent: { agent_name: 'client-bot' } });
    expect((await client.listAgents()).map((a) => a.agent_name)).toContain('client-bot');
    const patched = await client.patchAgent('client-bot', { agent_description: 'via client' });
    expect(patched.agent_description).toBe('via client');
    const { control_id } = await client.createControl({ name: 'client-deny', data: denyDrop });
    expect(await client.link('client-bot', control_id)).toEqual({ linked: true });
    expect(await client.link('client-bot', control_id)).toEqual({ linked: false });
    expect((await client.getAgent('client-bot')).controls?.map((c) => c.name)).toEqual(['client-deny']);
    expect((await client.getAgentControls('client-bot')).controls.map((c) => c.control_id)).toEqual([control_id]);
    const step = { type: 'tool' as const, name: 'run_sql', input: { query: 'DROP TABLE t' } };
    const result = await client.evaluate({ agent_name: 'client-bot', stage: 'pre', step });
    expect(result).toMatchObject({ decision: 'deny', is_safe: false });
    expect(await client.unlink('client-bot', control_id)).toEqual({ unlinked: true });
    expect((await client.evaluate({ agent_name: 'client-bot', stage: 'pre', step })).decision).toBe('allow');
    const unknown = await client.evaluate({ agent_name: 'nobody', stage: 'pre', step }).catch((e: unknown) => e);
    expect((unknown as ApiError).status).toBe(404);
    await client.link('client-bot', control_id);
    expect(await client.deleteAgent('Client-Bot')).toEqual({ agent_name: 'client-bot', unlinked_controls: [control_id] });
    expect(((await client.deleteAgent('client-bot').catch((e: unknown) => e)) as ApiError).status).toBe(404);
  });

  it('observability: ingest, query, stats', async () => {
    // Run by the SDK: the server refuses ingested events of the controls it runs itself.
    const { control_id } = await client.createControl({ name: 'obs-control', data: { ...denyDrop, execution: 'sdk' } });
    const event = {
      control_execution_id: 'ex-1', trace_id: 'tr-1', span_id: 'sp-1', agent_name: 'obs-bot', control_id,
      control_name: 'c', check_stage: 'pre' as const, applies_to: 'tool' as const, action: 'deny' as const,
      matched: true, confidence: 1, timestamp: new Date().toISOString(), execution_duration_ms: 0.1,
      evaluator_name: 'regex', selector_path: 'input', error_message: null, metadata: null,
    };
    expect(await client.ingestEvents([event])).toMatchObject({ received: 1, enqueued: 1, dropped: 0 });
    await vi.waitFor(async () => {
      expect((await client.queryEvents({ agent_name: 'obs-bot' })).events.map((e) => e.control_execution_id)).toEqual(['ex-1']);
    }, { timeout: 30_000 });
    const stats = await client.stats({ agent_name: 'obs-bot', time_range: '1h' });
    expect(stats.totals).toMatchObject({ executions: 1, matches: 1 });
    const one = await client.controlStats(control_id, { agent_name: 'obs-bot', time_range: '1h' });
    expect(one.stats).toMatchObject({ control_name: 'obs-control', executions: 1, actions: { deny: 1 } });
  });
});
