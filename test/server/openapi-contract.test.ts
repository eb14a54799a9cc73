/**
 * The OpenAPI document against the real server: a server on a SQLite file, listening on a
 * real socket, with keys on, observability, step recording and watch mode. Every operation
 * the document lists is called over HTTP and every answer (successes and the problems
 * provoked on purpose) is validated with ajv against the document's schema for its status
 * and media type; the document must list exactly the routes Fastify registered; and the
 * document must pass `redocly lint` (recommended rules) and openapi-typescript.
 *
 * A new route needs an entry (`config.openapi`, see src/server/openapi.ts) and a call in
 * the scenario below; a new field in an answer needs its zod schema updated. Either one
 * missing fails here, naming the operation.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/config.js';
import { startServer, type ServerHandle } from '../../src/server/start.js';
import { DocumentValidator, type Answer } from './openapi-validator.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const ADMIN = 'contract-admin-key';
const REGULAR = 'contract-regular-key';
const BODY_LIMIT = 65_536;

type Key = 'admin' | 'regular' | 'none';
interface Request {
  params?: Record<string, string | number>;
  query?: Record<string, string>;
  body?: unknown;
  /** Sent as is (with `contentType`), instead of `body` as JSON. */
  raw?: string;
  contentType?: string;
  key?: Key;
  /** Read only the first chunk, then hang up (Server-Sent Events). */
  stream?: boolean;
}
/** A JSON body, read loosely: each assertion states the shape it expects. */
type Loose = ReturnType<typeof JSON.parse>;
interface Result extends Answer {
  json: Loose;
}

let dir: string;
let server: ServerHandle;
let validator: DocumentValidator;
/** `METHOD /path` of every operation answered with a 2xx. */
const succeeded = new Set<string>();
const failures: string[] = [];

function urlOf(template: string, request: Request): string {
  const path = template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = request.params?.[name];
    if (value === undefined) throw new Error(`no value for {${name}} in ${template}`);
    return encodeURIComponent(String(value));
  });
  const query = request.query ? `?${new URLSearchParams(request.query).toString()}` : '';
  return `${server.url}${path}${query}`;
}

/** One real request; the answer is checked against the document and recorded. */
async function send(method: string, template: string, request: Request = {}): Promise<Result> {
  const headers: Record<string, string> = {};
  const key = request.key ?? 'admin';
  if (key !== 'none') headers['x-api-key'] = key === 'admin' ? ADMIN : REGULAR;
  let body: string | undefined;
  if (request.raw !== undefined) {
    body = request.raw;
    headers['content-type'] = request.contentType ?? 'application/json';
  } else if (request.body !== undefined) {
    body = JSON.stringify(request.body);
    headers['content-type'] = 'application/json';
  }
  // A write without a body sends no content type, as SPEC's clients do.
  const abort = new AbortController();
  const res = await fetch(urlOf(template, request), { method: method.toUpperCase(), headers, body, signal: abort.signal });
  let text: string;
  if (request.stream && res.ok) {
    const reader = res.body!.getReader();
    const first = await reader.read();
    text = new TextDecoder().decode(first.value);
    abort.abort();
  } else {
    text = await res.text();
  }
  const answer: Answer = { status: res.status, contentType: res.headers.get('content-type') ?? '', text };
  failures.push(...validator.check(template, method, answer));
  if (res.status >= 200 && res.status < 300) succeeded.add(`${method.toUpperCase()} ${template}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { ...answer, json };
}

/** A success the scenario relies on: anything else stops it with the server's answer. */
async function ok(method: string, template: string, request: Request = {}): Promise<Loose> {
  const res = await send(method, template, request);
  if (res.status >= 300) throw new Error(`${method.toUpperCase()} ${template}: ${res.status} ${res.text}`);
  return res.json;
}

/** Polls a read until `done` holds (events and recordings are written in the background). */
async function eventually(read: () => Promise<Loose>, done: (body: Loose) => boolean): Promise<Loose> {
  let last: Loose;
  await expect.poll(async () => (last = await read()), { interval: 100 }).toSatisfy(done);
  return last;
}

const sqlData = (overrides: Record<string, unknown> = {}) => ({
  description: 'block destructive SQL',
  scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
  action: { decision: 'deny' },
  ...overrides,
});

/** Bodies the operations with a path parameter accept. */
const VALID_BODIES: Record<string, unknown> = {
  'PATCH /api/v1/agents/{agent_name}': { agent_description: 'runs SQL' },
  'PATCH /api/v1/controls/{control_id}': { enabled: true },
  'PUT /api/v1/controls/{control_id}/data': { data: sqlData() },
  'POST /api/v1/controls/{control_id}/restore': { revision: 1 },
  'POST /api/v1/approvals/{approval_id}/approve': { reason: 'fine' },
  'POST /api/v1/approvals/{approval_id}/deny': { reason: 'no' },
  'PUT /api/v1/policies/{policy_id}': { name: 'contract-policy', controls: ['contract-sql'], agents: { names: ['x'] } },
  'PUT /api/v1/mcp-servers/{name}': { name: 'contract-mcp', transport: { url: 'https://mcp.example.com/mcp' }, tools: [] },
  'POST /api/v1/mcp-servers/{name}/drift': { agent_name: 'contract-gateway', tool: 'calendar', kind: 'unpinned', fingerprint: `sha256:${'b'.repeat(64)}`, on_drift: 'block' },
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-openapi-'));
  const watched = join(dir, 'controls');
  cpSync(join(ROOT, 'test/fixtures/example-controls'), watched, { recursive: true, filter: (src) => !src.includes('/tests') });
  const config = loadConfig({
    DATABASE_URL: join(dir, 'guard.db'),
    HOST: '127.0.0.1',
    PORT: '0',
    GUARD_API_KEY_ENABLED: 'true',
    GUARD_API_KEYS: REGULAR,
    GUARD_ADMIN_API_KEYS: ADMIN,
    GUARD_BODY_LIMIT_BYTES: String(BODY_LIMIT),
    // The loops below send many requests without a key; the throttle has a test of its own.
    GUARD_AUTH_MAX_FAILURES: '1000000',
    GUARD_RECORD_STEPS: 'true',
    OBSERVABILITY_ENABLED: 'true',
    OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '0.05',
  });
  server = await startServer({ ...config, watchDir: watched }, { env: {}, logger: false, handleSignals: false, print: () => undefined });
  const res = await fetch(`${server.url}/openapi.json`);
  validator = new DocumentValidator((await res.json()) as Record<string, unknown>);
});

afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Every operation of the document as `METHOD /path`. */
function documentedOperations(): string[] {
  const paths = validator.doc.paths as Record<string, Record<string, unknown>>;
  return Object.entries(paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)).sort();
}

describe('the OpenAPI document against the real server', () => {
  it('lists exactly the routes the server registered', () => {
    const registered = server.app.registeredRoutes.map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`).sort();
    const documented = documentedOperations();
    expect(registered.filter((r) => !documented.includes(r)), 'routes without config.openapi').toEqual([]);
    expect(documented).toEqual(registered);
  });

  it('gives every operation an operationId, a summary, a tag and its access level', () => {
    const ids = new Set<string>();
    for (const name of documentedOperations()) {
      const [method, path] = name.split(' ') as [string, string];
      const op = validator.operation(path, method)!;
      expect(op, name).toMatchObject({ operationId: expect.any(String), summary: expect.any(String), tags: [expect.any(String)] });
      expect(ids.has(op.operationId as string), `${name}: operationId ${String(op.operationId)} twice`).toBe(false);
      ids.add(op.operationId as string);
      const access = server.app.registeredRoutes.find((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}` === name)?.access;
      expect(op['x-access'], name).toBe(access);
      expect(op.security, name).toEqual(access === 'public' ? [] : undefined);
    }
  });

  it('answers every operation as documented (a real call each, bodies validated)', async () => {
    await ok('get', '/health', { key: 'none' });
    await ok('get', '/metrics', { key: 'none' });
    await ok('get', '/openapi.json', { key: 'none' });
    await ok('get', '/schema.json', { key: 'none' });
    await ok('get', '/api/v1/evaluators', { key: 'regular' });

    // Controls: one with data, one in shadow mode, one without data yet.
    const sql = await ok('put', '/api/v1/controls', { body: { name: 'contract-sql', data: sqlData() } });
    const shadow = await ok('put', '/api/v1/controls', {
      body: { name: 'contract-shadow', data: sqlData({ mode: 'shadow', evaluator: { name: 'regex', config: { pattern: 'users' } } }) },
    });
    const bare = await ok('put', '/api/v1/controls', { body: { name: 'contract-bare' } });
    const page = await ok('get', '/api/v1/controls', { query: { limit: '2' } });
    expect(page.pagination.has_more).toBe(true);
    await ok('get', '/api/v1/controls', { query: { limit: '2', cursor: String(page.pagination.next_cursor) } });
    await ok('get', '/api/v1/controls', { query: { name: 'contract-sql' } });
    await ok('post', '/api/v1/controls/validate', { body: { data: sqlData() }, key: 'regular' });
    await ok('get', '/api/v1/controls/{control_id}', { params: { control_id: sql.control_id } });
    await ok('patch', '/api/v1/controls/{control_id}', { params: { control_id: bare.control_id }, body: { name: 'contract-bare-renamed' } });
    await ok('put', '/api/v1/controls/{control_id}/data', { params: { control_id: bare.control_id }, body: { data: sqlData({ enabled: false }) } });
    await ok('get', '/api/v1/controls/{control_id}/data', { params: { control_id: bare.control_id } });

    // Agents and links.
    const agent = { agent_name: 'Contract-Bot', steps: [{ type: 'tool', name: 'run_sql', input_schema: { type: 'object' } }] };
    expect((await send('post', '/api/v1/agents/initAgent', { body: agent, key: 'regular' })).status).toBe(201);
    expect((await send('post', '/api/v1/agents/initAgent', { body: { ...agent, agent_version: '2' }, key: 'regular' })).status).toBe(200);
    await ok('get', '/api/v1/agents');
    await ok('patch', '/api/v1/agents/{agent_name}', { params: { agent_name: 'contract-bot' }, body: { agent_description: 'runs SQL' } });
    for (const id of [sql.control_id, shadow.control_id, bare.control_id]) {
      await ok('post', '/api/v1/agents/{agent_name}/controls/{control_id}', { params: { agent_name: 'contract-bot', control_id: id } });
    }
    const detail = await ok('get', '/api/v1/agents/{agent_name}', { params: { agent_name: 'contract-bot' } });
    expect(detail.controls).toHaveLength(3);
    await ok('get', '/api/v1/agents/{agent_name}/controls', { params: { agent_name: 'contract-bot' }, key: 'regular' });
    await ok('get', '/api/v1/agents', { query: { label: 'team=payments' }, key: 'regular' });

    // Policies: bound by label, then replaced, read, paged, and its history.
    const policy = await ok('put', '/api/v1/policies', {
      body: { name: 'contract-policy', controls: ['contract-sql'], agents: { match_labels: { team: 'payments' } } },
    });
    await ok('put', '/api/v1/policies/{policy_id}', {
      params: { policy_id: policy.policy_id },
      body: { name: 'contract-policy', description: 'payments', controls: ['contract-sql'], agents: { match_expressions: [{ key: 'team', operator: 'In', values: ['payments'] }] } },
    });
    await ok('get', '/api/v1/policies', { query: { limit: '5' }, key: 'regular' });
    await ok('get', '/api/v1/policies/{policy_id}', { params: { policy_id: policy.policy_id }, key: 'regular' });
    await ok('get', '/api/v1/policies/{policy_id}/history', { params: { policy_id: policy.policy_id }, key: 'regular' });
    await ok('put', '/api/v1/policies', { body: { name: 'contract-doomed', controls: ['contract-sql'], agents: { names: ['x'] } } });
    const doomed = await ok('get', '/api/v1/policies', { query: { name: 'contract-doomed' } });
    await ok('delete', '/api/v1/policies/{policy_id}', { params: { policy_id: doomed.policies[0].policy_id } });

    // Pinned MCP servers: created, replaced, read with a regular key, listed, deleted.
    const pinned = { name: 'contract-mcp', transport: { command: ['npx', 'server'] }, tools: [] };
    await ok('put', '/api/v1/mcp-servers/{name}', { params: { name: 'contract-mcp' }, body: pinned });
    await ok('put', '/api/v1/mcp-servers/{name}', { params: { name: 'contract-mcp' }, body: { ...pinned, deny_tools: ['x'] } });
    await ok('get', '/api/v1/mcp-servers/{name}', { params: { name: 'contract-mcp' }, key: 'regular' });
    await ok('get', '/api/v1/mcp-servers', { query: { limit: '5' }, key: 'regular' });
    await ok('put', '/api/v1/mcp-servers/{name}', { params: { name: 'contract-mcp-doomed' }, body: { ...pinned, name: 'contract-mcp-doomed' } });
    await ok('delete', '/api/v1/mcp-servers/{name}', { params: { name: 'contract-mcp-doomed' } });
    // A gateway reports a tool the document does not pin (tools: []), with a regular key.
    await ok('post', '/api/v1/mcp-servers/{name}/drift', { params: { name: 'contract-mcp' }, body: VALID_BODIES['POST /api/v1/mcp-servers/{name}/drift'], key: 'regular' });

    // Evaluation: a deny with a shadow match, and an allow.
    const step = (query: string) => ({ agent_name: 'contract-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query } } });
    const denied = await ok('post', '/api/v1/evaluation', { body: step('DROP TABLE users'), key: 'regular' });
    expect(denied.decision).toBe('deny');
    expect(denied.shadow_matches).toHaveLength(1);
    await ok('post', '/api/v1/evaluation', { body: step('select 1'), key: 'regular' });

    // Sessions: a control that labels the session, a step in one, and the session read back.
    const marker = await ok('put', '/api/v1/controls', { body: { name: 'contract-session-mark', data: sqlData({ action: { decision: 'log', session_labels: ['touched_sql'] } }) } });
    await ok('post', '/api/v1/agents/initAgent', { body: { agent_name: 'session-bot' } });
    await ok('post', '/api/v1/agents/{agent_name}/controls/{control_id}', { params: { agent_name: 'session-bot', control_id: marker.control_id } });
    const inSession = await ok('post', '/api/v1/evaluation', { body: { ...step('DROP TABLE users'), agent_name: 'session-bot', session_id: 'contract-session' }, key: 'regular' });
    expect(inSession.session).toEqual({ id: 'contract-session', labels: ['touched_sql'] });
    const session = await ok('get', '/api/v1/sessions/{session_id}', { params: { session_id: 'contract-session' }, query: { agent_name: 'session-bot' }, key: 'regular' });
    expect(session.labels.map((l: { label: string }) => l.label)).toEqual(['touched_sql']);

    // Observability: ingest, then read what the evaluations wrote.
    const event = {
      control_execution_id: 'exec-1', trace_id: 'trace-1', span_id: 'span-1', agent_name: 'contract-bot',
      // A control an SDK ran: events naming a server-run control are the server's own to write.
      control_id: 424_242, control_name: 'sdk-local-control', check_stage: 'pre', applies_to: 'tool', action: 'deny',
      matched: true, confidence: 1, timestamp: new Date().toISOString(), execution_duration_ms: 0.5,
      evaluator_name: 'regex', selector_path: 'input.query',
    };
    await ok('post', '/api/v1/observability/events', { body: { events: [event] }, key: 'regular' });
    const query = () => ok('post', '/api/v1/observability/events/query', { body: { agent_name: 'contract-bot', limit: 50 }, key: 'regular' });
    const events = await eventually(query, (b) => b.total >= 3);
    expect(events.total).toBeGreaterThanOrEqual(3);
    await ok('post', '/api/v1/observability/events/query', { key: 'regular' });
    await ok('get', '/api/v1/observability/stats', { query: { agent_name: 'contract-bot', time_range: '1h' }, key: 'regular' });
    await ok('get', '/api/v1/observability/stats', { key: 'regular' });
    await ok('get', '/api/v1/observability/stats/controls/{control_id}', { params: { control_id: sql.control_id }, query: { time_range: '1h' } });
    const report = await eventually(
      () => ok('get', '/api/v1/shadow-report', { query: { since: '1h', agent_name: 'contract-bot' }, key: 'regular' }),
      (b) => b.controls[0]?.examples.length > 0,
    );
    expect(report.controls[0].examples).toHaveLength(1);
    await ok('get', '/api/v1/observability/events/stream', { query: { decision: 'deny,steer' }, stream: true, key: 'regular' });
    const recordings = await eventually(() => ok('get', '/api/v1/recordings', { query: { agent_name: 'contract-bot' } }), (b) => b.steps.length >= 2);
    expect(recordings.steps.length).toBeGreaterThanOrEqual(2);

    // Approvals: an ask control, its question listed, read, waited on, approved without a body, another denied.
    const ask = await ok('put', '/api/v1/controls', {
      body: { name: 'contract-ask', data: { ...sqlData(), evaluator: { name: 'regex', config: { pattern: '(?i)^refund' } }, action: { decision: 'ask' } } },
    });
    await ok('post', '/api/v1/agents/{agent_name}/controls/{control_id}', { params: { agent_name: 'contract-bot', control_id: ask.control_id } });
    const asked = await ok('post', '/api/v1/evaluation', { body: step('refund 1'), key: 'regular' });
    expect(asked.decision).toBe('ask');
    const other = await ok('post', '/api/v1/evaluation', { body: step('refund 2'), key: 'regular' });
    await ok('get', '/api/v1/approvals', { query: { status: 'pending', limit: '5' }, key: 'regular' });
    await ok('get', '/api/v1/approvals/{approval_id}', { params: { approval_id: asked.approval.id }, key: 'regular' });
    await ok('get', '/api/v1/approvals/{approval_id}/wait', { params: { approval_id: asked.approval.id }, query: { timeout: '50ms' }, key: 'regular' });
    await ok('post', '/api/v1/approvals/{approval_id}/approve', { params: { approval_id: asked.approval.id } });
    await ok('post', '/api/v1/approvals/{approval_id}/deny', { params: { approval_id: other.approval.id }, body: { reason: 'no refunds today' } });
    expect((await ok('post', '/api/v1/evaluation', { body: step('refund 1'), key: 'regular' })).decision).toBe('allow');

    // History: the renamed control's revisions, restoring the first, the audit log.
    const history = await ok('get', '/api/v1/controls/{control_id}/history', { params: { control_id: bare.control_id }, query: { limit: '10' } });
    const first = history.entries.at(-1).revision as number;
    const restored = await ok('post', '/api/v1/controls/{control_id}/restore', { params: { control_id: bare.control_id }, body: { revision: first } });
    expect(restored.control.name).toBe('contract-bare');
    await ok('get', '/api/v1/audit', { query: { since: '1h', limit: '5' } });

    // A batch at the revision read just before, watch mode's status, then unlink and delete.
    const { revision } = await ok('get', '/api/v1/changes/revision', { key: 'regular' });
    await ok('post', '/api/v1/changes', {
      body: {
        expected_revision: revision,
        changes: [
          { op: 'create_control', control: { name: 'contract-batch', data: sqlData() } },
          { op: 'link', agent_name: 'contract-bot', control_name: 'contract-batch' },
        ],
      },
    });
    const status = await ok('get', '/api/v1/reload/status', { key: 'regular' });
    expect(status.state).toBe('ok');
    await ok('delete', '/api/v1/agents/{agent_name}/controls/{control_id}', { params: { agent_name: 'contract-bot', control_id: sql.control_id } });
    await ok('delete', '/api/v1/controls/{control_id}', { params: { control_id: shadow.control_id } });
    await ok('post', '/api/v1/agents/initAgent', { body: { agent_name: 'doomed-bot' } });
    await ok('delete', '/api/v1/agents/{agent_name}', { params: { agent_name: 'doomed-bot' } });

    expect(failures).toEqual([]);
    expect(documentedOperations().filter((op) => !succeeded.has(op))).toEqual([]);
  });

  it('declares the problems the server answers with, and each problem body conforms', async () => {
    failures.length = 0;
    const unknown = { agent_name: 'nobody-here', control_id: 999_999, session_id: 'nobody-session', approval_id: 'apr_nobody', policy_id: 999_999, name: 'nobody-mcp' };
    const known = { agent_name: 'contract-bot', control_id: 1, session_id: 'contract-session', approval_id: 'apr_nobody', policy_id: 1, name: 'contract-mcp' };
    // Sessions are per agent: the agent is a required query parameter.
    const needsQuery: Record<string, Record<string, string>> = { 'GET /api/v1/sessions/{session_id}': { agent_name: 'session-bot' } };
    /** Sends a request the operation must refuse, and checks the status is the one expected. */
    const refused = async (name: string, request: Request, expected: number) => {
      const [method, path] = name.split(' ') as [string, string];
      const res = await send(method, path, request);
      if (res.status !== expected) failures.push(`${name}: expected ${expected}, got ${res.status} ${res.text.slice(0, 200)}`);
      if (!res.contentType.startsWith('application/problem+json')) failures.push(`${name} -> ${res.status}: content type ${res.contentType}`);
    };
    for (const name of documentedOperations()) {
      const [method, path] = name.split(' ') as [string, string];
      const op = validator.operation(path, method)!;
      if (op['x-access'] !== 'public') await refused(name, { params: known, key: 'none' }, 401);
      if (op['x-access'] === 'admin') await refused(name, { params: known, key: 'regular' }, 403);
      // A valid body, so that the unknown name or id is what gets refused.
      // PUT /mcp-servers/{name} creates what it names: no name is unknown to it.
      if (path.includes('{') && name !== 'PUT /api/v1/mcp-servers/{name}') await refused(name, { params: unknown, ...(needsQuery[name] ? { query: needsQuery[name] } : {}), ...(op.requestBody ? { body: VALID_BODIES[name] } : {}) }, 404);
      if (method !== 'GET') await refused(name, { params: known, raw: op.requestBody ? 'text' : '', contentType: 'text/plain' }, 415);
      if (op.requestBody) {
        await refused(name, { params: known, raw: '{"not json' }, 400);
        await refused(name, { params: known, raw: JSON.stringify({ padding: 'x'.repeat(BODY_LIMIT) }) }, 413);
        await refused(name, { params: known, body: [] }, 422);
      }
      const query = (op.parameters as Array<{ in: string }> | undefined)?.some((p) => p.in === 'query');
      if (query) await refused(name, { params: known, query: { no_such_parameter: '1' } }, 422);
    }
    // Conflicts with what this test stores first.
    await ok('put', '/api/v1/controls', { body: { name: 'problem-sql' } });
    await ok('post', '/api/v1/agents/initAgent', { body: { agent_name: 'problem-bot', agent_version: '1' } });
    await refused('PUT /api/v1/controls', { body: { name: 'problem-sql' } }, 409);
    await refused('POST /api/v1/agents/initAgent', { body: { agent_name: 'problem-bot', agent_version: '2', conflict_mode: 'strict' } }, 409);
    await refused('POST /api/v1/changes', { body: { changes: [{ op: 'create_control', control: { name: 'problem-sql' } }] } }, 409);
    await refused('GET /api/v1/shadow-report', { query: { agent_name: 'nobody-here' } }, 404);
    expect(failures).toEqual([]);
  });

  it('declares 429 where too many missing keys get an address refused', async () => {
    const throttled = await startServer(
      loadConfig({ DATABASE_URL: join(dir, 'throttled.db'), HOST: '127.0.0.1', PORT: '0', GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: ADMIN, GUARD_AUTH_MAX_FAILURES: '1' }),
      { env: {}, logger: false, handleSignals: false, print: () => undefined },
    );
    try {
      const statuses: number[] = [];
      for (const key of [undefined, ADMIN]) {
        const res = await fetch(`${throttled.url}/api/v1/agents`, { headers: key ? { 'x-api-key': key } : {} });
        statuses.push(res.status);
        const answer = { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
        expect(validator.check('/api/v1/agents', 'get', answer)).toEqual([]);
      }
      expect(statuses).toEqual([401, 429]);
    } finally {
      await throttled.close();
    }
  });

  it('passes redocly lint (recommended rules) without warnings', async () => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(validator.doc));
    const cli = join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    const { stdout } = await run(process.execPath, [cli, 'lint', '--config', join(ROOT, 'redocly.yaml'), '--format', 'json', file], { env, cwd: dir }).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }),
    );
    const report = JSON.parse(stdout) as { totals: { errors: number }; problems: Array<{ ruleId: string; severity: string; location: Array<{ pointer: string }> }> };
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer ?? ''}`).sort();
    expect(problems).toEqual([]);
    expect(report.totals.errors).toBe(0);
  }, 60_000);

  it('generates TypeScript types with openapi-typescript that type-check the client example of docs/server.md', async () => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(validator.doc));
    const types = join(dir, 'guardctl-api.d.ts');
    await run(process.execPath, [join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'), file, '-o', types], { cwd: dir });
    const generated = readFileSync(types, 'utf8');
    for (const name of documentedOperations()) {
      const [method, path] = name.split(' ') as [string, string];
      expect(generated, name).toContain(`${String(validator.operation(path, method)!.operationId)}: {`);
    }
    // The docs' example, compiled against the generated types (openapi-fetch from this repository).
    const docs = readFileSync(join(ROOT, 'docs/server.md'), 'utf8');
    const example = /#### Generating a client[\s\S]*?```ts\n([\s\S]*?)```/.exec(docs)?.[1];
    expect(example, 'the ts example under "Generating a client" in docs/server.md').toBeDefined();
    writeFileSync(join(dir, 'client.ts'), example!);
    const tsconfig = {
      compilerOptions: {
        strict: true, noEmit: true, target: 'es2022', module: 'esnext', moduleResolution: 'bundler', skipLibCheck: true,
        types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')],
        paths: { 'openapi-fetch': [join(ROOT, 'node_modules/openapi-fetch')] },
      },
      files: ['client.ts'],
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
    const compiled = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: dir }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? 'tsc failed',
    );
    expect(compiled).toBe('');
  }, 120_000);

  it('serves a client generated from it (openapi-fetch): typed calls reach the right routes', async () => {
    const guard = createClient<Loose>({ baseUrl: server.url, headers: { 'X-API-Key': ADMIN } });
    const page = await guard.GET('/api/v1/controls', { params: { query: { limit: 1 } } });
    expect(page.response.status).toBe(200);
    expect(page.data.controls).toHaveLength(1);
    const denied = await guard.POST('/api/v1/evaluation', {
      body: { agent_name: 'contract-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'drop table t' } } },
    });
    expect(denied.data.decision).toBe('deny');
    const missing = await guard.GET('/api/v1/controls/{control_id}', { params: { path: { control_id: 999_999 } } });
    expect(missing.error).toMatchObject({ status: 404, error_code: 'not_found' });
  });
});
