/**
 * Attacks on sessions over HTTP on SQLite (issue #37, third pass): the built binary, a
 * real file. Labels are written before the answer that reports them, so a server killed
 * right after that answer (SIGKILL, no shutdown) keeps them: the deny that
 * depends on them fires at the session's next step on the restarted server.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send, startServeProcess, type ServeProcess } from './serve-process.js';

const env = { OBSERVABILITY_ENABLED: 'false' };

const CONTROLS = `kind: Control
name: mark-untrusted-content
scope: { step_types: [tool], step_names: [fetch_url], stages: [post] }
selector: { path: name }
evaluator: { name: regex, config: { pattern: '.' } }
action: { decision: log, session_labels: [untrusted_content] }
---
kind: Control
name: mark-private-data
scope: { step_types: [tool], step_names: [get_customer], stages: [post] }
selector: { path: name }
evaluator: { name: regex, config: { pattern: '.' } }
action: { decision: log, session_labels: [private_data] }
---
kind: Control
name: deny-exfiltration
scope: { step_types: [tool], step_names: [send_email], stages: [pre], session_labels: [untrusted_content, private_data] }
selector: { path: name }
evaluator: { name: regex, config: { pattern: '.' } }
action: { decision: deny, message: no way out }
---
kind: Agent
agent_name: mail-bot
controls: [mark-untrusted-content, mark-private-data, deny-exfiltration]
`;

let root: string;
let dir: string;
let db: string;
const running: ServeProcess[] = [];

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'guardctl-e2e-session-kill-'));
  dir = join(root, 'controls');
  mkdirSync(dir);
  writeFileSync(join(dir, 'sessions.yaml'), CONTROLS);
  db = join(root, 'guard.db');
});

afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  rmSync(root, { recursive: true, force: true });
});

async function serve(): Promise<ServeProcess> {
  const server = await startServeProcess({ args: ['--db', db, '--watch', dir], env });
  running.push(server);
  return server;
}

function step(server: ServeProcess, sessionId: string, stage: 'pre' | 'post', name: string) {
  return send(server.url, 'POST', '/api/v1/evaluation', { agent_name: 'mail-bot', stage, session_id: sessionId, step: { type: 'tool', name, input: {} } });
}

async function killed(server: ServeProcess): Promise<void> {
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGKILL');
  await exited;
}

describe('sessions on SQLite over HTTP: a server killed keeps the labels it answered', () => {
  it('a label answered just before a SIGKILL decides at the next step on the restarted server', async () => {
    let server = await serve();
    expect((await step(server, 'run-1', 'post', 'fetch_url')).body.session).toEqual({ id: 'run-1', labels: ['untrusted_content'] });
    const answered = await step(server, 'run-1', 'post', 'get_customer');
    expect(answered.status).toBe(200);
    expect(answered.body.session).toEqual({ id: 'run-1', labels: ['private_data', 'untrusted_content'] });
    // Killed at once after the answer: no shutdown, no once-a-second write.
    await killed(server);

    server = await serve();
    const next = await step(server, 'run-1', 'pre', 'send_email');
    expect(next.status).toBe(200);
    expect(next.body.decision).toBe('deny');
    // Another session of the same agent was never marked: its send is allowed.
    expect((await step(server, 'run-2', 'pre', 'send_email')).body.decision).toBe('allow');

    const info = await send(server.url, 'GET', '/api/v1/sessions/run-1?agent_name=mail-bot');
    expect(info.status).toBe(200);
    expect((info.body.labels as Array<{ label: string }>).map((l) => l.label)).toEqual(['untrusted_content', 'private_data']);
  });
});
