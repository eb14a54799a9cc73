/**
 * SPEC's endpoints, called the way SPEC shows them (issue #35, "Done when"): a real server
 * on 127.0.0.1 and a free port, a real SQLite file, and a plain HTTP client that sends only
 * the headers set here (node:http adds Host, Connection and, for a body, nothing but the
 * Content-Length given). Body-less writes carry no content type, as `curl -X POST` and
 * `httpx.post(url)` send them. Each call asserts the status and the shape of the answer.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/config.js';
import { startServer, type ServerHandle } from '../../src/server/start.js';

let dir: string;
let server: ServerHandle;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-contract-'));
  const config = loadConfig({ PORT: '0', DATABASE_URL: join(dir, 'guard.db'), OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '0.05' });
  server = await startServer(config, { handleSignals: false, print: () => undefined, logger: false });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  type: string;
  text: string;
  // Read loosely: each assertion states the shape it expects.
  body: ReturnType<typeof JSON.parse>;
}

/** One request with exactly the headers given; a JSON body adds only Content-Type and Content-Length. */
function request(method: string, path: string, json?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const payload = json === undefined ? undefined : Buffer.from(JSON.stringify(json));
  const sent: Record<string, string> = { ...headers };
  if (payload) Object.assign(sent, { 'content-type': 'application/json', 'content-length': String(payload.length) });
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: sent, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = undefined;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), text, body });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const API = '/api/v1';
const controlData = {
  description: 'block destructive SQL',
  enabled: true,
  execution: 'server',
  scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
  action: { decision: 'deny', metadata: { severity: 'high' } },
};
const problem = { type: expect.any(String), title: expect.any(String), status: expect.any(Number), detail: expect.any(String), error_code: expect.any(String) };

describe('every SPEC endpoint, as SPEC shows it', () => {
  it('system, controls, agents, links, evaluation, observability', async () => {
    // System (public).
    const health = await request('GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'healthy', version: expect.any(String) });
    const evaluators = await request('GET', `${API}/evaluators`);
    expect(evaluators.status).toBe(200);
    expect(evaluators.body.evaluators.map((e: { name: string }) => e.name)).toEqual(expect.arrayContaining(['regex', 'list']));

    // Controls: create with a name, then set its data (SPEC's two steps).
    const created = await request('PUT', `${API}/controls`, { name: 'block-destructive-sql' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ control_id: expect.any(Number), name: 'block-destructive-sql' });
    const id = created.body.control_id as number;
    const putData = await request('PUT', `${API}/controls/${id}/data`, { data: controlData });
    expect(putData.status).toBe(200);
    const data = await request('GET', `${API}/controls/${id}/data`);
    expect(data.status).toBe(200);
    expect(data.body.data).toMatchObject({ selector: { path: 'input.query' }, action: { decision: 'deny' } });
    const validate = await request('POST', `${API}/controls/validate`, { data: controlData });
    expect(validate.status).toBe(200);
    expect(validate.body).toEqual({ success: true });
    const invalid = await request('POST', `${API}/controls/validate`, { data: { ...controlData, scope: { stages: ['during'] } } });
    expect(invalid.status).toBe(422);
    expect(invalid.type).toContain('application/problem+json');
    expect(invalid.body).toMatchObject({ ...problem, errors: expect.any(Array) });
    const patched = await request('PATCH', `${API}/controls/${id}`, { enabled: false });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ enabled: false });
    expect((await request('PATCH', `${API}/controls/${id}`, { enabled: true, name: 'block-destructive-sql' })).status).toBe(200);
    const one = await request('GET', `${API}/controls/${id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ control_id: id, name: 'block-destructive-sql', enabled: true });
    const page = await request('GET', `${API}/controls?cursor=0&limit=10`);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ controls: [expect.objectContaining({ control_id: id })], pagination: { limit: 10, has_more: false, total: 1 } });

    // Agents.
    const init = await request('POST', `${API}/agents/initAgent`, { agent_name: 'Support-Bot', agent_description: 'answers customers', steps: [{ type: 'tool', name: 'run_sql' }] });
    expect(init.status).toBe(201);
    expect(init.body).toMatchObject({ created: true, agent: { agent_name: 'support-bot' } });
    const agents = await request('GET', `${API}/agents`);
    expect(agents.status).toBe(200);
    expect(agents.body.agents.map((a: { agent_name: string }) => a.agent_name)).toEqual(['support-bot']);
    const agentPatch = await request('PATCH', `${API}/agents/support-bot`, { agent_version: '2' });
    expect(agentPatch.status).toBe(200);
    expect(agentPatch.body).toMatchObject({ agent_name: 'support-bot', agent_version: '2' });

    // Links: a body-less POST with no content type, exactly as SPEC's clients send it.
    const link = await request('POST', `${API}/agents/support-bot/controls/${id}`);
    expect(link.status, link.text).toBe(200);
    expect(link.body).toEqual({ linked: true });
    const agent = await request('GET', `${API}/agents/support-bot`);
    expect(agent.status).toBe(200);
    expect(agent.body).toMatchObject({ agent_name: 'support-bot', controls: [{ control_id: id, name: 'block-destructive-sql' }] });
    const refresh = await request('GET', `${API}/agents/support-bot/controls`);
    expect(refresh.status).toBe(200);
    expect(refresh.body).toMatchObject({ agent_name: 'support-bot', controls: [expect.objectContaining({ control_id: id })] });

    // Evaluation: a deny is a result, not an error; a zero-argument tool call is a step too.
    const step = (input: unknown) => ({ agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input } });
    const denied = await request('POST', `${API}/evaluation`, step({ query: 'DROP TABLE users' }));
    expect(denied.status).toBe(200);
    expect(denied.body).toMatchObject({ is_safe: false, decision: 'deny', matches: [expect.objectContaining({ control_id: id, action: 'deny' })] });
    const allowed = await request('POST', `${API}/evaluation`, step({ query: 'select 1' }));
    expect(allowed.body).toMatchObject({ is_safe: true, decision: 'allow' });
    const noArgs = await request('POST', `${API}/evaluation`, step({}));
    expect(noArgs.status).toBe(200);
    expect(noArgs.body.decision).toBe('allow');

    // Observability: ingest (an event of a control an SDK ran), query, stats.
    const event = {
      control_execution_id: 'exec-1', trace_id: 'trace-1', span_id: 'span-1', agent_name: 'support-bot', control_id: 424_242,
      control_name: 'sdk-local-control', check_stage: 'pre', applies_to: 'tool', action: 'deny', matched: true, confidence: 1,
      timestamp: new Date().toISOString(), execution_duration_ms: 0.5, evaluator_name: 'regex', selector_path: 'input.query',
    };
    const ingest = await request('POST', `${API}/observability/events`, { events: [event] });
    expect(ingest.status).toBe(202);
    expect(ingest.body).toEqual({ received: 1, enqueued: 1, dropped: 0 });
    // Until the ingested event is written: the evaluations' own events (a deny, a selector
    // that found nothing) can be written by an earlier flush.
    await expect
      .poll(async () => (await request('POST', `${API}/observability/events/query`, { agent_name: 'support-bot', limit: 50 })).body.events.map((e: { control_id: number }) => e.control_id), { timeout: 10_000 })
      .toContain(424_242);
    const events = await request('POST', `${API}/observability/events/query`, { agent_name: 'support-bot', limit: 50 });
    expect(events.status).toBe(200);
    expect(events.body.events.map((e: { control_id: number }) => e.control_id)).toEqual(expect.arrayContaining([id, 424_242]));
    const stats = await request('GET', `${API}/observability/stats?agent_name=support-bot&time_range=5m`);
    expect(stats.status).toBe(200);
    expect(JSON.stringify(stats.body)).toContain('block-destructive-sql');
    const controlStats = await request('GET', `${API}/observability/stats/controls/${id}?agent_name=support-bot&time_range=5m`);
    expect(controlStats.status).toBe(200);
    expect(controlStats.body).toMatchObject({ control_id: id });

    // Metrics (public, Prometheus text).
    const metrics = await request('GET', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.type).toContain('text/plain');
    expect(metrics.text).toContain('guard_evaluations_total');

    // Unlink, delete the agent and the control: body-less DELETEs with no content type.
    const unlink = await request('DELETE', `${API}/agents/support-bot/controls/${id}`);
    expect(unlink.status).toBe(200);
    expect(unlink.body).toEqual({ unlinked: true });
    const relink = await request('POST', `${API}/agents/support-bot/controls/${id}`, undefined, { 'content-length': '0' });
    expect(relink.body).toEqual({ linked: true });
    const deleteAgent = await request('DELETE', `${API}/agents/support-bot`);
    expect(deleteAgent.status).toBe(200);
    expect(deleteAgent.body).toEqual({ deleted: true, agent_name: 'support-bot', unlinked_controls: [id] });
    const deleted = await request('DELETE', `${API}/controls/${id}`);
    expect(deleted.status).toBe(200);
    const gone = await request('GET', `${API}/controls/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ ...problem, error_code: 'not_found' });
  }, 60_000);

  it('refuses bodies that are not JSON, and cross-site browser requests, with problem bodies', async () => {
    // A text/plain body holding JSON: what a cross-site form or fetch can send unasked.
    const text = await new Promise<Answer>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'PUT', path: `${API}/controls`, headers: { 'content-type': 'text/plain', 'content-length': '10' }, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const t = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), text: t, body: JSON.parse(t) });
        });
      });
      req.on('error', reject);
      req.end('{"name":1}');
    });
    expect(text.status).toBe(415);
    expect(text.body).toMatchObject({ ...problem, error_code: 'unsupported_media_type' });
    const cross = await request('POST', `${API}/controls/validate`, { data: controlData }, { origin: 'https://evil.example' });
    expect(cross.status).toBe(403);
    expect(cross.body).toMatchObject({ ...problem, error_code: 'cross_site' });
    const rebound = await request('GET', `${API}/agents`, undefined, { host: `rebind.evil.example:${port}` });
    expect(rebound.status).toBe(403);
    expect(rebound.body).toMatchObject({ ...problem, error_code: 'host_not_allowed' });
  });
});
