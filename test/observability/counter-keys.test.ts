/**
 * guardctl issue #34 item 13 (low): rate and budget keys are often user ids or e-mail
 * addresses; stats (GET /observability/stats, the control's stats, `guardctl tui`) show
 * each key masked as matches are (`jane….com`), never as it was counted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { addControl, makeApp, type TestApp } from './app-helper.js';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const KEYS = ['jane.doe@example.com', 'user-4111111111111111', 'acct 219-09-9999', 'bob'];

describe('stats show counter keys masked', () => {
  it('in the agent stats and the control stats', async () => {
    t = await makeApp();
    const id = await addControl(t.store, 'support-bot', 'per-user', {
      selector: { path: '*' },
      evaluator: { name: 'rate', config: { limit: 5, window: '1h', key: 'context.user_id' } },
      action: { decision: 'deny' },
    });
    for (const user of KEYS) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/evaluation',
        payload: { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 't', input: {}, context: { user_id: user } } },
      });
      expect(res.statusCode).toBe(200);
    }
    for (const url of ['/api/v1/observability/stats?agent_name=support-bot', `/api/v1/observability/stats/controls/${id}?agent_name=support-bot`]) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, res.body).toBe(200);
      const keys = (res.json<{ counters: Array<{ key: string }> }>().counters ?? []).map((c) => c.key).sort();
      expect(keys).toEqual(['jane….com', 'user…1111', 'acct…9999', '…'].sort());
      for (const k of KEYS) expect(res.body).not.toContain(k);
    }
  });
});
