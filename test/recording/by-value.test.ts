/**
 * Redaction by value, end to end: a server on a real socket with a SQLite file records a
 * step whose innocently named field holds an AWS key and a card number; the recording read
 * back (through the API and from the file) has both masked, and the rest of the text kept.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { assembleServer } from '../../src/server/assemble.js';
import { loadConfig } from '../../src/server/config.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/types.js';

const AWS_KEY = 'AKIAIOSFODNN7EXAMPLE';

interface RecordedStep {
  input: { note: string; items: Array<{ memo: string }> };
}
const CARD = '4111 1111 1111 1111';

let cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function startServer(): Promise<{ url: string; store: Store }> {
  const dir = mkdtempSync(join(tmpdir(), 'guardctl-recording-'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const store = await openStore(join(dir, 'guard.db'));
  const config = loadConfig({ OBSERVABILITY_ENABLED: 'false', OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '0.05', GUARD_RECORD_STEPS: 'true' });
  const server = await assembleServer(config, { store, registry: createDefaultRegistry(), observability: false });
  cleanup.push(() => server.close());
  const address = await server.app.listen({ host: '127.0.0.1', port: 0 });
  return { url: address, store };
}

async function send(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? null : JSON.parse(text) };
}

describe('recorded steps are redacted by value', () => {
  it('masks an AWS key and a card number under a field named note, and keeps the rest', async () => {
    const { url, store } = await startServer();
    expect((await send(url, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' })).status).toBeLessThan(300);
    const note = `deploy with ${AWS_KEY}, then charge ${CARD} for order 1234 5678 9012 3456`;
    const step = { type: 'tool', name: 'checkout', input: { note, items: [{ sku: 'A-1', memo: `key=${AWS_KEY}` }] } };
    const answer = await send(url, 'POST', '/api/v1/evaluation', { agent_name: 'bot', stage: 'pre', step });
    expect(answer.status).toBe(200);

    const recorded = await vi.waitFor(async () => {
      const page = (await send(url, 'GET', '/api/v1/recordings?agent_name=bot')).json as { steps: Array<{ step: RecordedStep }> };
      expect(page.steps).toHaveLength(1);
      return page.steps[0]!.step;
    });
    expect(recorded.input.note).toBe('deploy with AKIA…MPLE, then charge 4111…1111 for order 1234 5678 9012 3456');
    expect(recorded.input.items[0]!.memo).toBe('key=AKIA…MPLE');

    // What is stored in the SQLite file holds neither.
    const rows = await store.queryRecordedSteps({ limit: 10 });
    const stored = JSON.stringify(rows.steps);
    expect(stored).not.toContain(AWS_KEY);
    expect(stored).not.toContain(CARD);
    expect(stored).toContain('1234 5678 9012 3456');
  });
});

describe('numbers are redacted by value too (guardctl issue #34 item 5)', () => {
  it('a card sent as a JSON number is not stored as it is; other numbers are', async () => {
    const { url, store } = await startServer();
    expect((await send(url, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' })).status).toBeLessThan(300);
    const step = { type: 'tool', name: 'checkout', input: { n: 4111111111111111, list: [5500005555555559, -4111111111111111], qty: 3, order: 1234567890123456 } };
    expect((await send(url, 'POST', '/api/v1/evaluation', { agent_name: 'bot', stage: 'pre', step })).status).toBe(200);
    const recorded = await vi.waitFor(async () => {
      const page = (await send(url, 'GET', '/api/v1/recordings?agent_name=bot')).json as { steps: Array<{ step: { input: Record<string, unknown> } }> };
      expect(page.steps).toHaveLength(1);
      return page.steps[0]!.step;
    });
    expect(recorded.input).toEqual({ n: '4111…1111', list: ['5500…5559', '-4111…1111'], qty: 3, order: 1234567890123456 });
    const stored = JSON.stringify((await store.queryRecordedSteps({ limit: 10 })).steps);
    expect(stored).not.toContain('4111111111111111');
    expect(stored).not.toContain('5500005555555559');
  });
});

describe('object keys are redacted by value too', () => {
  it('a key that is a card number or an AWS key is stored masked, nested and in arrays too', async () => {
    const { url, store } = await startServer();
    expect((await send(url, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' })).status).toBeLessThan(300);
    const input = { environment: 'prod', '4111111111111111': 1, [AWS_KEY]: 'x', nested: { deep: { '5500005555555559': true } }, list: [{ [`key=${AWS_KEY}`]: 2 }], order: 'kept' };
    expect((await send(url, 'POST', '/api/v1/evaluation', { agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'checkout', input } })).status).toBe(200);
    const recorded = await vi.waitFor(async () => {
      const page = (await send(url, 'GET', '/api/v1/recordings?agent_name=bot')).json as { steps: Array<{ step: { input: Record<string, unknown> } }> };
      expect(page.steps).toHaveLength(1);
      return page.steps[0]!.step;
    });
    expect(recorded.input).toEqual({
      environment: 'prod',
      '4111…1111': 1,
      'AKIA…MPLE': 'x',
      nested: { deep: { '5500…5559': true } },
      list: [{ 'key=AKIA…MPLE': 2 }],
      order: 'kept',
    });
    const stored = JSON.stringify((await store.queryRecordedSteps({ limit: 10 })).steps);
    for (const leak of ['4111111111111111', '5500005555555559', AWS_KEY]) expect(stored).not.toContain(leak);
  });
});
