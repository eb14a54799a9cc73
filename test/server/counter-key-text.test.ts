/**
 * guardctl issue #34 item 13 (low): a NUL in a rate key was an evaluator error on
 * PostgreSQL only (its text type cannot hold one) and counted on SQLite. Both stores now
 * count such a key the same way, under a digest of the key (docs/evaluators.md), and keys
 * that differ only after the NUL, or in a lone surrogate, stay apart.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { storeKinds, type StoreApp } from './both-stores.js';
import { call, json } from './helpers.js';

const KEYS: Array<[string, string, string]> = [
  ['a NUL', 'ann\u0000x', 'ann\u0000y'],
  ['a NUL first', '\u0000', '\u0000\u0000'],
  ['a lone surrogate', 'ann\ud800', 'ann\udbff'],
];

for (const target of storeKinds()) {
  describe.skipIf(target.skip !== null)(target.skip ?? `rate keys with unusual text on ${target.kind}`, () => {
    let server: StoreApp | undefined;
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });
    afterAll(() => target.cleanup());

    it.each(KEYS)('%s: counted, the same on both stores, and kept apart from a near twin', async (_label, key, twin) => {
      server = await target.open();
      const created = await call(server.app, 'PUT', '/api/v1/controls', {
        name: 'per-account',
        data: { selector: { path: '*' }, evaluator: { name: 'rate', config: { limit: 1, window: '1m', key: 'input.account' } }, action: { decision: 'deny' } },
      });
      expect(created.statusCode, created.body).toBe(201);
      await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' });
      await call(server.app, 'POST', `/api/v1/agents/bot/controls/${json(created).control_id}`);
      const send = async (account: string) => {
        const res = await call(server!.app, 'POST', '/api/v1/evaluation', { agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 't', input: { account } } });
        expect(res.statusCode).toBe(200);
        return json(res) as { decision: string; errors: unknown[]; matches: Array<{ error?: string | null }> };
      };
      const first = await send(key);
      expect(first.errors).toEqual([]);
      expect(first.matches).toEqual([]);
      expect(first.decision).toBe('allow');
      const again = await send(key);
      expect(again.decision).toBe('deny');
      expect(again.matches[0]?.error ?? null).toBeNull();
      expect((await send(twin)).decision).toBe('allow');
    });
  });
}
