/**
 * Events carry the step's session: stored rows, the query filter and the live stream,
 * through the HTTP API of a real app on a real SQLite store (the store contract covers
 * both stores' columns).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ControlDataInput, EvaluationSummary } from '../../src/model/index.js';
import { followEventStream, type StreamState } from '../../src/client/event-stream.js';
import { addControl, denySql, makeApp, type TestApp } from './app-helper.js';

let t: TestApp | undefined;
const cleanups: Array<() => void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) c();
  await t?.close();
  t = undefined;
});

/** Marks the session when a page is fetched; a log match, stored as a row. */
const markUntrusted: ControlDataInput = {
  scope: { step_types: ['tool'], step_names: ['fetch_url'], stages: ['post'] },
  selector: { path: 'name' },
  evaluator: { name: 'regex', config: { pattern: '.' } },
  action: { decision: 'log', session_labels: ['untrusted_content'] },
};

function step(name: string, query: string, stage: 'pre' | 'post', session_id?: string) {
  return { agent_name: 'support-bot', stage, step: { type: 'tool', name, input: { query } }, ...(session_id === undefined ? {} : { session_id }) };
}

async function evaluate(body: object) {
  const res = await t!.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: body });
  expect(res.statusCode).toBe(200);
  return res.json<{ decision: string; session?: { id: string; labels: string[] } }>();
}

async function query(body: Record<string, unknown>) {
  return t!.app.inject({ method: 'POST', url: '/api/v1/observability/events/query', payload: body });
}

describe('events carry session_id', () => {
  it('stores the session of each evaluated step, null without one, and filters by it', async () => {
    t = await makeApp();
    await addControl(t.store, 'support-bot', 'block-sql', denySql);
    await evaluate(step('run_sql', 'DROP TABLE a', 'pre', 'sess-1'));
    await evaluate(step('run_sql', 'DROP TABLE b', 'pre'));
    await evaluate(step('run_sql', 'DROP TABLE c', 'pre', 'sess-2'));
    await evaluate(step('run_sql', 'DROP TABLE d', 'pre', 'sess-1'));
    await t.observability.flush();

    const all = await query({});
    expect(all.statusCode).toBe(200);
    expect((all.json().events as Array<{ session_id: string | null }>).map((e) => e.session_id)).toEqual(['sess-1', 'sess-2', null, 'sess-1']);

    const one = await query({ session_id: 'sess-1' });
    expect(one.statusCode).toBe(200);
    expect(one.json().total).toBe(2);
    expect((one.json().events as Array<{ session_id: string; control_name: string }>).every((e) => e.session_id === 'sess-1' && e.control_name === 'block-sql')).toBe(true);
    expect((await query({ session_id: 'sess' })).json().total).toBe(0);
  });

  it('refuses a bad session_id filter with 422 naming the field, and keeps what is stored', async () => {
    t = await makeApp();
    await addControl(t.store, 'support-bot', 'block-sql', denySql);
    await evaluate(step('run_sql', 'DROP TABLE a', 'pre', 'sess-1'));
    await t.observability.flush();
    for (const bad of ['x'.repeat(129), 'a\u0000b', '', 42]) {
      const res = await query({ session_id: bad });
      expect(res.statusCode).toBe(422);
      expect([...new Set((res.json().errors as Array<{ field: string }>).map((e) => e.field))]).toEqual(['session_id']);
    }
    expect((await query({ session_id: 'sess-1' })).json().total).toBe(1);
  });

  it('keeps session_id on events an SDK sends, and refuses one the model refuses', async () => {
    t = await makeApp();
    const event = {
      control_execution_id: 'x-1', trace_id: 't', span_id: 's', agent_name: 'support-bot', control_id: 7, control_name: 'sdk-control',
      check_stage: 'pre', applies_to: 'tool', action: 'deny', matched: true, confidence: 1, timestamp: new Date().toISOString(),
      execution_duration_ms: 1, evaluator_name: 'regex', selector_path: 'input',
    };
    const bad = await t.app.inject({ method: 'POST', url: '/api/v1/observability/events', payload: { events: [{ ...event, session_id: 'a\u0000b' }] } });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors[0].field).toBe('events[0].session_id');
    const ok = await t.app.inject({ method: 'POST', url: '/api/v1/observability/events', payload: { events: [{ ...event, session_id: 'sdk-sess' }] } });
    expect(ok.statusCode).toBe(202);
    await t.observability.flush();
    expect((await query({ session_id: 'sdk-sess' })).json().events).toMatchObject([{ control_execution_id: 'x-1', session_id: 'sdk-sess' }]);
  });
});

describe('the live stream carries the session', () => {
  function openStream(url: string): Promise<{ waitFor(pattern: RegExp): Promise<RegExpMatchArray>; text(): string }> {
    return new Promise((resolve, reject) => {
      const req = http.get(url, (res) => {
        let received = '';
        const waiters: Array<() => void> = [];
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          received += chunk;
          for (const w of waiters.splice(0)) w();
        });
        resolve({
          text: () => received,
          waitFor: (pattern) =>
            new Promise((done) => {
              const check = () => {
                const m = received.match(pattern);
                if (m) done(m);
                else waiters.push(check);
              };
              check();
            }),
        });
      });
      cleanups.push(() => req.destroy());
      req.on('error', (e) => {
        if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e);
      });
    });
  }

  it('sends the session id and the labels after the step; filters by session_id', async () => {
    t = await makeApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    await addControl(t.store, 'support-bot', 'mark-untrusted', markUntrusted);
    const all = await openStream(`${base}/api/v1/observability/events/stream`);
    const one = await openStream(`${base}/api/v1/observability/events/stream?session_id=sess-9`);
    await all.waitFor(/: connected/);
    await one.waitFor(/: connected/);

    await evaluate(step('fetch_url', 'https://example.com', 'post', 'sess-8'));
    await evaluate(step('fetch_url', 'https://example.com', 'post'));
    const marked = await evaluate(step('fetch_url', 'https://example.com', 'post', 'sess-9'));
    expect(marked.session).toEqual({ id: 'sess-9', labels: ['untrusted_content'] });

    const m = await one.waitFor(/event: evaluation\ndata: (.+)\n\n/);
    expect(JSON.parse(m[1]!) as EvaluationSummary).toMatchObject({ session_id: 'sess-9', session_labels: ['untrusted_content'] });
    expect(one.text().match(/event: evaluation/g)).toHaveLength(1);

    const three = await all.waitFor(/(?:event: evaluation\ndata: .+\n\n[^]*){3}/);
    const summaries = [...three[0].matchAll(/event: evaluation\ndata: (.+)\n\n/g)].map((x) => JSON.parse(x[1]!) as EvaluationSummary);
    expect(summaries.map((s) => [s.session_id, s.session_labels])).toEqual([
      ['sess-8', ['untrusted_content']],
      [null, null],
      ['sess-9', ['untrusted_content']],
    ]);
    expect((await t.app.inject({ url: '/api/v1/observability/events/stream?session_id=' + 'x'.repeat(129) })).statusCode).toBe(422);
  });

  it('the client (guardctl tui --session) follows one session: only its steps arrive, validated', async () => {
    t = await makeApp();
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const server = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    await addControl(t.store, 'support-bot', 'mark-untrusted', markUntrusted);
    const controller = new AbortController();
    cleanups.push(() => controller.abort());
    const got: EvaluationSummary[] = [];
    let state: StreamState = { kind: 'closed' };
    const done = followEventStream({ server, sessionId: 'follow me', signal: controller.signal }, { onEvaluation: (s) => got.push(s), onState: (s) => (state = s) });
    await expect.poll(() => state.kind).toBe('live');
    await evaluate(step('fetch_url', 'https://example.com', 'post', 'other'));
    await evaluate(step('fetch_url', 'https://example.com', 'post'));
    await evaluate(step('fetch_url', 'https://example.com', 'post', 'follow me'));
    await expect.poll(() => got.length).toBe(1);
    expect(got[0]).toMatchObject({ session_id: 'follow me', session_labels: ['untrusted_content'] });
    controller.abort();
    await done;
    expect(got).toHaveLength(1);
  });
});
