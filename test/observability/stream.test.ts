import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { EvaluationSummary } from '../../src/model/index.js';
import type { CreateObservabilityOptions } from '../../src/observability/observability.js';
import { addControl, denySql, evaluation, makeApp, type TestApp } from './app-helper.js';

let t: TestApp | undefined;
const cleanups: Array<() => void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) c();
  await t?.close();
  t = undefined;
});

async function listen(stream?: CreateObservabilityOptions['stream']): Promise<string> {
  t = await makeApp({}, { stream });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

/** A real HTTP client reading the stream as text as it arrives. */
interface StreamClient {
  status: number;
  headers: http.IncomingHttpHeaders;
  text(): string;
  /** Resolves once the received text matches. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
  close(): void;
}

function openStream(url: string): Promise<StreamClient> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      let received = '';
      const waiters: Array<() => void> = [];
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        received += chunk;
        for (const w of waiters.splice(0)) w();
      });
      const client: StreamClient = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        text: () => received,
        waitFor(pattern) {
          return new Promise((done) => {
            const check = () => {
              const m = received.match(pattern);
              if (m) done(m);
              else waiters.push(check);
            };
            check();
          });
        },
        close: () => req.destroy(),
      };
      cleanups.push(client.close);
      resolve(client);
    });
    req.on('error', (e) => {
      if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e);
    });
  });
}

function summary(i: number, padding = ''): EvaluationSummary {
  return {
    id: `ev-${i}`,
    timestamp: new Date().toISOString(),
    trace_id: 't',
    agent_name: 'support-bot',
    step_name: `step-${i}${padding}`,
    step_type: 'tool',
    stage: 'pre',
    decision: 'deny',
    duration_ms: 0.1,
    evaluated: 1,
    matches: [],
    shadow_matches: [],
    errors: [],
  };
}

describe('GET /api/v1/observability/events/stream', () => {
  it('streams evaluations as Server-Sent Events, filtered by decision', async () => {
    const base = await listen();
    await addControl(t!.store, 'support-bot', 'block-sql', denySql);
    const client = await openStream(`${base}/api/v1/observability/events/stream?decision=deny,steer`);
    expect(client.status).toBe(200);
    expect(client.headers['content-type']).toContain('text/event-stream');
    await client.waitFor(/: connected/);

    const post = (q: string) => t!.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation(q) });
    expect((await post('SELECT 1')).json().decision).toBe('allow');
    expect((await post('DROP TABLE users')).json().decision).toBe('deny');

    const m = await client.waitFor(/id: (\S+)\nevent: evaluation\ndata: (.+)\n\n/);
    const data = JSON.parse(m[2]!) as EvaluationSummary;
    expect(data.id).toBe(m[1]);
    expect(data).toMatchObject({ agent_name: 'support-bot', decision: 'deny', step_name: 'run_sql', evaluated: 1 });
    // What the control matched is masked in the excerpt and the message.
    expect(data.matches[0]).toMatchObject({ control_name: 'block-sql', action: 'deny', excerpt: 'D…E users' });
    expect(data.matches[0]!.message).not.toContain('DROP TABLE');
    // The allowed step came first and was filtered out.
    expect(client.text().match(/event: evaluation/g)).toHaveLength(1);
  });

  it('filters by agent and sends reload notices to everyone', async () => {
    const base = await listen();
    const other = await openStream(`${base}/api/v1/observability/events/stream?agent_name=Other-Bot`);
    await other.waitFor(/: connected/);
    t!.observability.hub.publishEvaluation(summary(1));
    t!.observability.publishReload({ timestamp: new Date().toISOString(), result: 'success', revision: 'r1', errors: [] });
    const m = await other.waitFor(/event: reload\ndata: (.+)\n\n/);
    expect(JSON.parse(m[1]!)).toMatchObject({ result: 'success', revision: 'r1' });
    expect(other.text()).not.toContain('event: evaluation');
    const metrics = (await t!.app.inject({ url: '/metrics' })).body;
    expect(metrics).toContain('guard_reloads_total{result="success"} 1');
  });

  it('sends heartbeats', async () => {
    const base = await listen({ heartbeatMs: 20 });
    const client = await openStream(`${base}/api/v1/observability/events/stream`);
    await client.waitFor(/: ping\n\n/);
  });

  it('rejects bad filters with 422 and too many subscribers with 503', async () => {
    const base = await listen({ maxSubscribers: 1 });
    const bad = await t!.app.inject({ url: '/api/v1/observability/events/stream?decision=maybe' });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors[0].field).toBe('decision[0]');
    const first = await openStream(`${base}/api/v1/observability/events/stream`);
    await first.waitFor(/: connected/);
    const second = await openStream(`${base}/api/v1/observability/events/stream`);
    expect(second.status).toBe(503);
  });

  it('forgets a client that disconnects', async () => {
    const base = await listen();
    const client = await openStream(`${base}/api/v1/observability/events/stream`);
    await client.waitFor(/: connected/);
    expect(t!.observability.hub.size).toBe(1);
    client.close();
    await expect.poll(() => t!.observability.hub.size).toBe(0);
  });

  it('a client that never reads does not block evaluations or grow memory: once its queue is full it is dropped', async () => {
    const base = await listen({ queueSize: 8 });
    await addControl(t!.store, 'support-bot', 'block-sql', denySql);
    const { port } = new URL(base);
    const socket = net.connect(Number(port), '127.0.0.1');
    cleanups.push(() => socket.destroy());
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (received += c));
    socket.write('GET /api/v1/observability/events/stream HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await expect.poll(() => received).toContain(': connected');
    socket.pause();

    const hub = t!.observability.hub;
    const padding = 'x'.repeat(16_000);
    let i = 0;
    // Publish until the socket pushes back; kernel buffers hold some megabytes first.
    while (!hub.subscribers()[0]!.waitingForDrain && i < 20_000) hub.publishEvaluation(summary(i++, padding));
    expect(hub.subscribers()[0]!.waitingForDrain).toBe(true);
    for (let k = 0; k < 8; k++) hub.publishEvaluation(summary(i++, padding));
    expect(hub.subscribers()[0]!.queued).toBe(8);
    hub.publishEvaluation(summary(i++, padding));
    expect(hub.size).toBe(0);
    expect(hub.drops()).toEqual({ behind: 1, stalled: 0 });
    // Evaluations still answer.
    const res = await t!.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation('DROP TABLE x') });
    expect(res.json().decision).toBe('deny');
  });

  it('disconnects a client stalled for too long', async () => {
    const base = await listen({ stallMs: 1 });
    const { port } = new URL(base);
    const socket = net.connect(Number(port), '127.0.0.1');
    cleanups.push(() => socket.destroy());
    let received = '';
    socket.on('data', (c: Buffer) => (received += c.toString()));
    socket.write('GET /api/v1/observability/events/stream HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await expect.poll(() => received).toContain(': connected');
    socket.pause();
    const hub = t!.observability.hub;
    const padding = 'x'.repeat(16_000);
    let i = 0;
    await expect
      .poll(() => {
        for (let k = 0; k < 500 && hub.size > 0; k++) hub.publishEvaluation(summary(i++, padding));
        return hub.size;
      })
      .toBe(0);
  });

  it('closing the app ends open streams', async () => {
    const base = await listen();
    const client = await openStream(`${base}/api/v1/observability/events/stream`);
    await client.waitFor(/: connected/);
    await t!.app.close();
    expect(t!.observability.hub.size).toBe(0);
  });
});
