// GUARD_APPROVAL_WEBHOOK_URL against a real local HTTP receiver: chat-webhook JSON, retried
// and counted, never carrying a secret or card number of the step.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/config.js';
import { call, json, startTestServer, type TestServer } from '../server/helpers.js';
import { askLargePayments, evaluate, payment, seedPayments } from './helpers.js';

interface Receiver {
  url: string;
  bodies: string[];
  close(): Promise<void>;
}

/** Answers each post with the next status of `statuses` (the last one repeats). */
async function receiver(statuses: number[]): Promise<Receiver> {
  const bodies: string[] = [];
  let calls = 0;
  const server = createServer((req: IncomingMessage, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    req.on('end', () => {
      bodies.push(text);
      res.statusCode = statuses[Math.min(calls++, statuses.length - 1)]!;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hooks/T000/secret-path`, bodies, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open) await o.close();
  open = [];
});

async function metric(server: TestServer, result: string): Promise<number> {
  const text = await server.observability!.metrics.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`guard_approval_webhook_deliveries_total{result="${result}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('approval webhook', () => {
  it('posts each new approval once, as chat JSON, retried after a failure and counted', async () => {
    const hook = await receiver([503, 200]);
    const server = await startTestServer({ observability: true, env: { OBSERVABILITY_ENABLED: 'true', GUARD_APPROVAL_WEBHOOK_URL: hook.url } });
    open.push(server, hook);
    await seedPayments(server.app);
    const card = '4111111111111111';
    const aws = 'AKIAIOSFODNN7EXAMPLE';
    const asked = await evaluate(server.app, payment(75_000, { memo: `card ${card} key ${aws}`, card }));
    // The same question again posts nothing more.
    await evaluate(server.app, payment(75_000, { memo: `card ${card} key ${aws}`, card }));
    await expect.poll(() => hook.bodies.length, { interval: 20, message: 'the retried post' }).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hook.bodies).toHaveLength(2);
    const body = JSON.parse(hook.bodies[1]!) as Record<string, unknown>;
    expect(body).toMatchObject({
      approval_id: asked.approval.id, status: 'pending', agent_name: 'payer', control_name: 'large-payments', stage: 'pre', step_type: 'tool', step_name: 'pay',
    });
    expect(body.text).toEqual(expect.stringContaining(`guardctl approvals approve ${asked.approval.id}`));
    expect((body.step as { input: { amount: number } }).input.amount).toBe(75_000);
    for (const raw of hook.bodies) {
      expect(raw).not.toContain(card);
      expect(raw).not.toContain(aws);
    }
    expect(await metric(server, 'retried')).toBe(1);
    expect(await metric(server, 'sent')).toBe(1);
  });

  it('gives up after its retries and counts the failure; the step still waits for a person', async () => {
    const hook = await receiver([500]);
    const server = await startTestServer({ observability: true, env: { OBSERVABILITY_ENABLED: 'true', GUARD_APPROVAL_WEBHOOK_URL: hook.url } });
    open.push(server, hook);
    await seedPayments(server.app);
    expect((await evaluate(server.app, payment(12_000))).decision).toBe('ask');
    // The default retries wait 0.25 + 1 + 5 s before the fourth attempt.
    await expect.poll(() => hook.bodies.length, { interval: 20, timeout: 20_000, message: 'four attempts' }).toBe(4);
    await expect.poll(() => metric(server, 'failed'), { interval: 20, message: 'the failure counted' }).toBe(1);
    expect(await metric(server, 'retried')).toBe(3);
  }, 20_000);

  it('is the operator’s setting only: a URL with credentials or another scheme stops the start', () => {
    expect(() => loadConfig({ GUARD_APPROVAL_WEBHOOK_URL: 'ftp://hooks.example/x' })).toThrow(/GUARD_APPROVAL_WEBHOOK_URL uses ftp:/);
    expect(() => loadConfig({ GUARD_APPROVAL_WEBHOOK_URL: 'https://user:pw@hooks.example/x' })).toThrow(/user name or password/);
    expect(() => loadConfig({ GUARD_APPROVAL_WEBHOOK_URL: 'not a url' })).toThrow(/is not a URL/);
    expect(loadConfig({}).approvalWebhookUrl).toBeNull();
  });
});

describe('approval webhook and listing, against secrets where nobody looks', () => {
  it('a secret in an object key, a nested array, the context or the step name reaches neither the webhook nor the API in clear', async () => {
    const hook = await receiver([200]);
    const server = await startTestServer({ observability: true, env: { OBSERVABILITY_ENABLED: 'true', GUARD_APPROVAL_WEBHOOK_URL: hook.url } });
    open.push(server, hook);
    const aws = 'AKIAIOSFODNN7EXAMPLE';
    const card = '4111111111111111';
    // Any tool name: the step name is the agent's to choose.
    const anyTool = { ...askLargePayments, scope: { step_types: ['tool'], stages: ['pre'] } };
    const created = await call(server.app, 'PUT', '/api/v1/controls', { name: 'large-anything', data: anyTool });
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'payer' });
    await call(server.app, 'POST', `/api/v1/agents/payer/controls/${json(created).control_id as number}`);
    const step = { type: 'tool', name: `pay_${aws}`, input: { amount: 90_000, [`to ${card}`]: 1, lines: [[{ note: `key ${aws}` }]] }, context: { hint: `card ${card}` } };
    const asked = await evaluate(server.app, { agent_name: 'payer', stage: 'pre', step });
    expect(asked.decision).toBe('ask');
    await expect.poll(() => hook.bodies.length, { interval: 20 }).toBe(1);
    const shown = [
      hook.bodies[0]!,
      (await call(server.app, 'GET', '/api/v1/approvals')).body,
      (await call(server.app, 'GET', `/api/v1/approvals/${asked.approval.id as string}`)).body,
    ];
    for (const text of shown) {
      expect(text).not.toContain(aws);
      expect(text).not.toContain(card);
    }
  });
});
