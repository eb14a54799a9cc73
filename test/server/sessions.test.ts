/**
 * Sessions on a real server (real SQLite file, real HTTP requests through inject):
 * labels added, required and absent across steps; sessionless steps; shadow labels;
 * repeat; bad session ids; GET /sessions; restart on the SQLite file; the bound.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ControlDataInput } from '../../src/model/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { assembleServer } from '../../src/server/assemble.js';
import { loadConfig } from '../../src/server/config.js';
import { MemorySessions } from '../../src/sessions/index.js';
import { openStore } from '../../src/store/open-store.js';
import { call, json, type TestServer } from './helpers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function start(path = ':memory:', env: Record<string, string> = {}): Promise<TestServer> {
  const store = await openStore(path);
  const server = await assembleServer(loadConfig({ OBSERVABILITY_ENABLED: 'false', ...env }), { store, registry: createDefaultRegistry(), observability: false });
  const s = { app: server.app, store, close: server.close };
  servers.push(s);
  return s;
}

/** Any step of the named tools matches (the step name is never empty). */
function on(names: string[], stage: 'pre' | 'post', action: ControlDataInput['action'], scope: ControlDataInput['scope'] = {}): ControlDataInput {
  return {
    scope: { step_types: ['tool'], step_names: names, stages: [stage], ...scope },
    selector: { path: 'name' },
    evaluator: { name: 'regex', config: { pattern: '.' } },
    action,
  };
}

/** The exfiltration rule of controls/sessions/exfiltration.yaml, through the API. */
const EXFILTRATION: Record<string, ControlDataInput> = {
  'mark-untrusted': on(['fetch_url', 'read_email'], 'post', { decision: 'log', session_labels: ['untrusted_content'] }),
  'mark-private': on(['get_customer'], 'post', { decision: 'log', session_labels: ['private_data'] }),
  'block-exfiltration': on(['send_email', 'http_post'], 'pre', { decision: 'deny', message: 'untrusted content and private data in this session: nothing leaves' }, {
    session_labels: ['untrusted_content', 'private_data'],
  }),
};

async function seed(s: TestServer, controls: Record<string, ControlDataInput>, agent = 'mail-bot'): Promise<void> {
  await call(s.app, 'POST', '/api/v1/agents/initAgent', { agent_name: agent });
  for (const [name, data] of Object.entries(controls)) {
    const created = await call(s.app, 'PUT', '/api/v1/controls', { name, data });
    expect(created.statusCode, created.body).toBe(201);
    await call(s.app, 'POST', `/api/v1/agents/${agent}/controls/${json(created).control_id}`);
  }
}

function stepOf(name: string, stage: 'pre' | 'post', session?: string, input: unknown = {}) {
  return { agent_name: 'mail-bot', stage, step: { type: 'tool', name, input }, ...(session === undefined ? {} : { session_id: session }) };
}

async function evaluate(s: TestServer, name: string, stage: 'pre' | 'post', session?: string, input?: unknown) {
  const res = await call(s.app, 'POST', '/api/v1/evaluation', stepOf(name, stage, session, input));
  expect(res.statusCode, res.body).toBe(200);
  return json(res);
}

describe('session labels', () => {
  it('deny send_email only once the session carries both labels, from the step after they were added', async () => {
    const s = await start();
    await seed(s, EXFILTRATION);
    expect((await evaluate(s, 'send_email', 'pre', 's1')).decision).toBe('allow');
    const fetched = await evaluate(s, 'fetch_url', 'post', 's1');
    expect(fetched.session).toEqual({ id: 's1', labels: ['untrusted_content'] });
    expect(fetched.matches).toEqual([expect.objectContaining({ control_name: 'mark-untrusted', session_labels_added: ['untrusted_content'] })]);
    expect((await evaluate(s, 'send_email', 'pre', 's1')).decision).toBe('allow');
    expect((await evaluate(s, 'get_customer', 'post', 's1')).session.labels).toEqual(['private_data', 'untrusted_content']);
    const denied = await evaluate(s, 'send_email', 'pre', 's1');
    expect(denied).toMatchObject({ decision: 'deny', is_safe: false, session: { id: 's1', labels: ['private_data', 'untrusted_content'] } });
    // Another session of the same agent, another agent's session of the same id: clean.
    expect((await evaluate(s, 'send_email', 'pre', 's2')).decision).toBe('allow');
    await seed(s, { 'block-exfiltration-too': EXFILTRATION['block-exfiltration']! }, 'other-bot');
    const other = await call(s.app, 'POST', '/api/v1/evaluation', { ...stepOf('send_email', 'pre', 's1'), agent_name: 'other-bot' });
    expect(other.statusCode, other.body).toBe(200);
    expect(json(other).decision).toBe('allow');
  });

  it('never apply a label to other controls of the step that added it', async () => {
    const s = await start();
    await seed(s, {
      'mark-secret': on(['read_vault'], 'pre', { decision: 'log', session_labels: ['secret_read'] }),
      'no-vault-after-secret': on(['read_vault'], 'pre', { decision: 'deny' }, { session_labels: ['secret_read'] }),
    });
    const first = await evaluate(s, 'read_vault', 'pre', 'v');
    expect(first.decision).toBe('allow');
    expect(first.session.labels).toEqual(['secret_read']);
    expect((await evaluate(s, 'read_vault', 'pre', 'v')).decision).toBe('deny');
  });

  it('session_labels_absent: deploy is denied until run_tests added tests_passed; a step without a session carries no labels', async () => {
    const s = await start();
    await seed(s, {
      'tests-passed': on(['run_tests'], 'post', { decision: 'log', session_labels: ['tests_passed'] }),
      'deploy-after-tests': on(['deploy'], 'pre', { decision: 'deny', message: 'run the tests first' }, { session_labels_absent: ['tests_passed'] }),
    });
    expect((await evaluate(s, 'deploy', 'pre', 'd')).decision).toBe('deny');
    await evaluate(s, 'run_tests', 'post', 'd');
    expect((await evaluate(s, 'deploy', 'pre', 'd')).decision).toBe('allow');
    // Sessionless: no labels, nothing kept, no session in the answer.
    const none = await evaluate(s, 'deploy', 'pre');
    expect(none.decision).toBe('deny');
    expect(none.session).toBeUndefined();
    await evaluate(s, 'run_tests', 'post');
    expect((await evaluate(s, 'deploy', 'pre')).decision).toBe('deny');
  });

  it('a shadow control names the labels it would add and adds none', async () => {
    const s = await start();
    await seed(s, {
      'mark-untrusted': { ...EXFILTRATION['mark-untrusted']!, mode: 'shadow' },
      'block-after-untrusted': on(['send_email'], 'pre', { decision: 'deny' }, { session_labels: ['untrusted_content'] }),
    });
    const res = await evaluate(s, 'fetch_url', 'post', 'sh');
    expect(res.shadow_matches).toEqual([expect.objectContaining({ control_name: 'mark-untrusted', session_labels_added: ['untrusted_content'] })]);
    expect(res.session.labels).toEqual([]);
    expect((await evaluate(s, 'send_email', 'pre', 'sh')).decision).toBe('allow');
  });

  it('GET /sessions/{id} names each label with the control and step that added it; 404 for an unknown one', async () => {
    const s = await start();
    await seed(s, EXFILTRATION);
    await evaluate(s, 'read_email', 'post', 'g');
    await evaluate(s, 'send_email', 'pre', 'g');
    const info = await call(s.app, 'GET', '/api/v1/sessions/g?agent_name=mail-bot');
    expect(info.statusCode).toBe(200);
    expect(json(info)).toMatchObject({
      agent_name: 'mail-bot',
      session_id: 'g',
      steps: 2,
      labels: [{ label: 'untrusted_content', control_name: 'mark-untrusted', stage: 'post', step_name: 'read_email' }],
    });
    expect((await call(s.app, 'GET', '/api/v1/sessions/nope?agent_name=mail-bot')).statusCode).toBe(404);
    expect((await call(s.app, 'GET', '/api/v1/sessions/g?agent_name=other-bot')).statusCode).toBe(404);
    expect((await call(s.app, 'GET', '/api/v1/sessions/g')).statusCode).toBe(422);
  });
});

describe('bad session ids', () => {
  it.each([
    ['too long', 'x'.repeat(129)],
    ['empty', ''],
    ['NUL', 'a\u0000b'],
    ['a control character', 'a\nb'],
    ['a lone surrogate', 'a\ud800b'],
    ['not a string', 42],
  ])('422 naming session_id: %s', async (_what, id) => {
    const s = await start();
    await seed(s, EXFILTRATION);
    const res = await call(s.app, 'POST', '/api/v1/evaluation', { ...stepOf('send_email', 'pre'), session_id: id });
    expect(res.statusCode).toBe(422);
    expect(json(res).errors.map((e: { field: string }) => e.field)).toContain('session_id');
  });

  it('accepts 128 characters of any printable text', async () => {
    const s = await start();
    await seed(s, EXFILTRATION);
    const id = 'é'.repeat(127) + '🙂'.slice(0, 1).replace(/./u, 'z');
    expect((await evaluate(s, 'read_email', 'post', id)).session.id).toBe(id);
  });
});

describe('sessions across a restart and at the bound', () => {
  it('survive a restart of a server on a SQLite file', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'guard-sessions-')), 'guard.db');
    const first = await start(path);
    await seed(first, EXFILTRATION);
    await evaluate(first, 'fetch_url', 'post', 'r');
    await evaluate(first, 'get_customer', 'post', 'r');
    await first.close();
    servers.splice(servers.indexOf(first), 1);
    const second = await start(path);
    expect((await evaluate(second, 'send_email', 'pre', 'r')).decision).toBe('deny');
    expect(json(await call(second.app, 'GET', '/api/v1/sessions/r?agent_name=mail-bot')).steps).toBe(3);
  });

  it('at GUARD_SESSION_MAX a new session is denied when a session-aware control could deny; held sessions keep their labels', async () => {
    const s = await start(':memory:', { GUARD_SESSION_MAX: '3' });
    await seed(s, EXFILTRATION);
    await evaluate(s, 'fetch_url', 'post', 'held');
    await evaluate(s, 'get_customer', 'post', 'held');
    // A flood of new ids fills the bound and then is refused.
    const flood = await Promise.all(Array.from({ length: 20 }, (_, i) => evaluate(s, 'read_email', 'post', `flood-${i}`)));
    expect(flood.filter((r) => r.session !== undefined)).toHaveLength(2);
    const refused = flood.filter((r) => r.session === undefined);
    expect(refused.every((r) => r.decision === 'deny' && r.matches[0].control_name === 'session-limit')).toBe(true);
    // The held session is never evicted to make room: its deny still holds.
    expect((await evaluate(s, 'send_email', 'pre', 'held')).decision).toBe('deny');
  });

  it('at the bound, an agent whose session-aware controls only log runs the step without a session', async () => {
    const s = await start(':memory:', { GUARD_SESSION_MAX: '1' });
    await seed(s, { 'mark-untrusted': EXFILTRATION['mark-untrusted']! });
    expect((await evaluate(s, 'fetch_url', 'post', 'a')).session.labels).toEqual(['untrusted_content']);
    const refused = await evaluate(s, 'fetch_url', 'post', 'b');
    expect(refused.decision).toBe('allow');
    expect(refused.session).toBeUndefined();
  });
});

describe('repeat', () => {
  it('matches the same call made more than max times in one session, per session', async () => {
    const s = await start();
    await seed(s, {
      'loop-breaker': {
        scope: { step_types: ['tool'], stages: ['pre'] },
        selector: { path: 'input' },
        evaluator: { name: 'repeat', config: { max: 2, window: '10m' } },
        action: { decision: 'steer', steering_context: { message: 'you are repeating the same call; change approach' } },
      },
    });
    const decisions = [];
    for (let i = 0; i < 4; i++) decisions.push((await evaluate(s, 'search', 'pre', 'loop', { q: 'same', page: 1 })).decision);
    expect(decisions).toEqual(['allow', 'allow', 'steer', 'steer']);
    // The same input in another key order is the same call.
    expect((await evaluate(s, 'search', 'pre', 'loop', { page: 1, q: 'same' })).decision).toBe('steer');
    // Another input, another session, no session: not repeats.
    expect((await evaluate(s, 'search', 'pre', 'loop', { q: 'other', page: 1 })).decision).toBe('allow');
    expect((await evaluate(s, 'search', 'pre', 'fresh', { q: 'same', page: 1 })).decision).toBe('allow');
    for (let i = 0; i < 4; i++) expect((await evaluate(s, 'search', 'pre', undefined, { q: 'same', page: 1 })).decision).toBe('allow');
  });
});

describe('saving session-aware controls', () => {
  it('PUT data answers a warning for a required label no stored control adds, and stores the data', async () => {
    const s = await start();
    await seed(s, { 'block-exfiltration': EXFILTRATION['block-exfiltration']! });
    const id = json(await call(s.app, 'GET', '/api/v1/controls?name=block-exfiltration')).controls[0].control_id;
    const put = await call(s.app, 'PUT', `/api/v1/controls/${id}/data`, { data: EXFILTRATION['block-exfiltration'] });
    expect(put.statusCode).toBe(200);
    expect(json(put).warnings.map((w: { field: string }) => w.field)).toEqual(['data.scope.session_labels[0]', 'data.scope.session_labels[1]']);
    await seed(s, { 'mark-untrusted': EXFILTRATION['mark-untrusted']!, 'mark-private': EXFILTRATION['mark-private']! });
    const again = await call(s.app, 'PUT', `/api/v1/controls/${id}/data`, { data: EXFILTRATION['block-exfiltration'] });
    expect(json(again).warnings).toBeUndefined();
  });

  it('PUT data answers a warning for a required label only a shadow control adds (a shadow control adds none)', async () => {
    const s = await start();
    await seed(s, { 'block-exfiltration': EXFILTRATION['block-exfiltration']!, 'mark-untrusted': { ...EXFILTRATION['mark-untrusted']!, mode: 'shadow' }, 'mark-private': EXFILTRATION['mark-private']! });
    const id = json(await call(s.app, 'GET', '/api/v1/controls?name=block-exfiltration')).controls[0].control_id;
    const put = await call(s.app, 'PUT', `/api/v1/controls/${id}/data`, { data: EXFILTRATION['block-exfiltration'] });
    expect(put.statusCode).toBe(200);
    expect(json(put).warnings).toEqual([expect.objectContaining({ field: 'data.scope.session_labels[0]', code: 'session_label_never_marked' })]);
  });

  it('refuses execution: sdk controls that add or require labels (422 naming execution)', async () => {
    const s = await start();
    const res = await call(s.app, 'PUT', '/api/v1/controls', { name: 'sdk-marker', data: { ...EXFILTRATION['mark-untrusted']!, execution: 'sdk' } });
    expect(res.statusCode).toBe(422);
    expect(json(res).errors).toEqual([expect.objectContaining({ field: 'data.execution', message: expect.stringContaining('session labels are server state') })]);
  });
});

describe('recording sessions', () => {
  it('keeps each recorded step\'s session_id (null without one)', async () => {
    const s = await start(':memory:', { GUARD_RECORD_STEPS: 'true', OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '0.05' });
    await seed(s, EXFILTRATION);
    await evaluate(s, 'fetch_url', 'post', 'rec-1');
    await evaluate(s, 'send_email', 'pre');
    await expect
      .poll(async () => json(await call(s.app, 'GET', '/api/v1/recordings?agent_name=mail-bot')).steps.map((r: { session_id: string | null }) => r.session_id), { timeout: 5000 })
      .toEqual(['rec-1', null]);
  });

  it('assembleServer serves the sessions its factory makes on the opened store', async () => {
    const store = await openStore(':memory:');
    let given: unknown;
    const server = await assembleServer(loadConfig({ OBSERVABILITY_ENABLED: 'false' }), {
      store,
      registry: createDefaultRegistry(),
      observability: false,
      sessions: (opened) => {
        given = opened;
        const made = new MemorySessions({ sessionTtlMs: 60_000, sessionMax: 10 }, undefined, Date.now, 'by-caller');
        made.begin('made-bot', 'made-here');
        return made;
      },
    });
    servers.push({ app: server.app, store, close: server.close });
    expect(given).toBe(store);
    const info = await call(server.app, 'GET', '/api/v1/sessions/made-here?agent_name=made-bot');
    expect(info.statusCode).toBe(200);
    expect(json(info)).toMatchObject({ session_id: 'made-here', steps: 1 });
  });
});
