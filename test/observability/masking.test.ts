/**
 * A guard never echoes what it guards (docs/security.md): what a control matched is masked
 * in the evaluation answer, the stored events, the stream's excerpt and the SDK's errors,
 * unless the control sets reveal_match. End to end through a real app on real SQLite.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ControlDataInput } from '../../src/model/index.js';
import { addControl, evaluation, makeApp, type TestApp } from './app-helper.js';

const CARD = '4111 1111 1111 1111';
const KEY = 'AKIAIOSFODNN7EXAMPLE';

const cardControl: ControlDataInput = {
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: '\\b(?:\\d[ -]?){12,15}\\d\\b' } },
  action: { decision: 'deny' },
};
const keyControl: ControlDataInput = {
  selector: { path: 'input.query' },
  evaluator: { name: 'list', config: { values: [KEY], match_mode: 'contains' } },
  action: { decision: 'log' },
};

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const post = (query: string) => t!.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation(query) });

describe('matched text is masked everywhere by default', () => {
  it('in the evaluation answer and the stored events', async () => {
    t = await makeApp();
    await addControl(t.store, 'support-bot', 'no-cards', cardControl);
    await addControl(t.store, 'support-bot', 'aws-keys', keyControl);
    const res = await post(`pay ${CARD} with key ${KEY} please`);
    expect(res.json().decision).toBe('deny');
    const messages = res.json<{ matches: Array<{ result: { message: string } }> }>().matches.map((m) => m.result.message);
    expect(messages.sort()).toEqual(['list matched "AKIA…MPLE"', 'pattern matched "4111…1111"']);
    expect(res.body).not.toContain(CARD);
    expect(res.body).not.toContain(KEY);

    await t.observability.flush();
    const events = await t.app.inject({ method: 'POST', url: '/api/v1/observability/events/query', payload: { agent_name: 'support-bot' } });
    expect(events.statusCode).toBe(200);
    expect(events.json().total).toBe(2);
    expect(events.body).not.toContain(CARD);
    expect(events.body).not.toContain(KEY);
  });

  it("in the stream's excerpt and message (what the dashboard and tui --format json show)", async () => {
    t = await makeApp();
    await addControl(t.store, 'support-bot', 'no-cards', cardControl);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (t.app.server.address() as AddressInfo).port;
    const controller = new AbortController();
    const response = await fetch(`http://127.0.0.1:${port}/api/v1/observability/events/stream`, { signal: controller.signal });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const waitFor = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${pattern}`);
        text += decoder.decode(value, { stream: true });
      }
    };
    await waitFor(/: connected/);
    await post(`card ${CARD} here`);
    await waitFor(/event: evaluation\ndata: .+\n\n/);
    controller.abort();
    const data = JSON.parse(/event: evaluation\ndata: (.+)\n\n/.exec(text)![1]!) as { matches: Array<{ message: string; excerpt: string }> };
    expect(data.matches[0]).toEqual(expect.objectContaining({ message: 'pattern matched "4111…1111"', excerpt: 'card 4111…1111 here' }));
    expect(text).not.toContain(CARD);
  });
});

describe('reveal_match', () => {
  it('shows the full text for a control that opts in', async () => {
    t = await makeApp();
    await addControl(t.store, 'support-bot', 'shows-keys', { ...keyControl, reveal_match: true });
    const res = await post(`key ${KEY}`);
    expect(res.json().matches[0].result.message).toBe(`list matched "${KEY}"`);
  });

  it('is validated with its field path', async () => {
    t = await makeApp();
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/controls/validate', payload: { data: { ...keyControl, reveal_match: 'yes' } } });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([expect.objectContaining({ field: 'data.reveal_match', code: 'invalid_type' })]);
  });
});

/**
 * guardctl issue #34 item 4: on the stream, the pii control's excerpt showed AWS, GitHub and
 * Stripe keys, the secrets control's showed cards and SSNs, and a sixth GitHub token was in
 * clear. Every excerpt masks every value a masking evaluator would find.
 */
describe("the stream's excerpts mask what any masking evaluator finds", () => {
  const gh = (i: number) => `ghp_${String(i).repeat(36)}`;
  const STRIPE = `sk_live_${'4eC39HqLyjWDarjtT1zdp7dc'}`;
  const SSN = '219-09-9999';
  const VALUES = [CARD, KEY, STRIPE, SSN, ...[1, 2, 3, 4, 5, 6, 7].map(gh)];

  it('for the pii and the secrets control of the same step', async () => {
    t = await makeApp();
    const guard = (name: string): ControlDataInput => ({ selector: { path: 'input.query' }, evaluator: { name, config: {} }, action: { decision: 'deny' } });
    await addControl(t.store, 'support-bot', 'pii', guard('pii'));
    await addControl(t.store, 'support-bot', 'secrets', guard('secrets'));
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (t.app.server.address() as AddressInfo).port;
    const controller = new AbortController();
    const response = await fetch(`http://127.0.0.1:${port}/api/v1/observability/events/stream`, { signal: controller.signal });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const waitFor = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${pattern}`);
        text += decoder.decode(value, { stream: true });
      }
    };
    await waitFor(/: connected/);
    await post(`${[1, 2, 3, 4, 5, 6, 7].map(gh).join(' ')} card ${CARD} key ${KEY} ssn ${SSN} ${STRIPE}`);
    await post(`ssn ${SSN} card ${CARD} ${KEY} ${STRIPE} ${gh(1)}`);
    await waitFor(/(event: evaluation\ndata: .+\n\n[^]*){2}/);
    controller.abort();
    const excerpts = [...text.matchAll(/event: evaluation\ndata: (.+)\n\n/g)].flatMap(
      (m) => (JSON.parse(m[1]!) as { matches: Array<{ control_name: string; excerpt: string }> }).matches,
    );
    expect(excerpts.map((m) => m.control_name).sort()).toEqual(['pii', 'pii', 'secrets', 'secrets']);
    for (const m of excerpts) for (const v of VALUES) expect(m.excerpt, m.control_name).not.toContain(v.slice(0, 12));
    for (const v of VALUES) expect(text).not.toContain(v);
  });
});

describe('texts evaluators build from the step are masked (json keys, sql identifiers)', () => {
  const RAW_CARD = '4111111111111111';
  const jsonControl: ControlDataInput = {
    selector: { path: 'input' },
    evaluator: { name: 'json', config: { schema: { type: 'object', properties: { query: { type: 'string' } }, additionalProperties: false } } },
    action: { decision: 'deny' },
  };
  const sqlControl: ControlDataInput = {
    selector: { path: 'input.query' },
    evaluator: { name: 'sql', config: { allowed_tables: ['orders'] } },
    action: { decision: 'deny' },
  };

  it('in the answer, the stored events and their metadata (failing_paths)', async () => {
    t = await makeApp();
    await addControl(t.store, 'support-bot', 'strict-shape', jsonControl);
    await addControl(t.store, 'support-bot', 'orders-only', sqlControl);
    const input = { query: `SELECT * FROM "${RAW_CARD}" JOIN ${KEY} ON true`, [RAW_CARD]: 1, [KEY]: 'x', nested: [{ [KEY]: 1 }] };
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input } } });
    expect(res.json().decision).toBe('deny');
    expect(res.json<{ matches: unknown[] }>().matches).toHaveLength(2);
    for (const leak of [RAW_CARD, KEY, KEY.toLowerCase()]) expect(res.body).not.toContain(leak);
    expect(res.body).toContain('input.4111…1111');

    await t.observability.flush();
    const events = await t.app.inject({ method: 'POST', url: '/api/v1/observability/events/query', payload: { agent_name: 'support-bot' } });
    expect(events.statusCode).toBe(200);
    expect(events.body).toContain('failing_paths');
    for (const leak of [RAW_CARD, KEY, KEY.toLowerCase()]) expect(events.body).not.toContain(leak);
  });
});
