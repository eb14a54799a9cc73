/**
 * Attacks on session ids as clients send them over HTTP (issue #37, ninth pass).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.js';
import type { GuardClient } from '../../src/client/index.js';
import type { ControlDataInput } from '../../src/model/index.js';
import { addControl, startRealServer, type RunningServer } from '../sdk/real-server.js';

const MARK: ControlDataInput = {
  scope: { step_types: ['tool'], step_names: ['fetch_url'], stages: ['post'] },
  selector: { path: 'name' },
  evaluator: { name: 'regex', config: { pattern: '.' } },
  action: { decision: 'log', session_labels: ['untrusted_content'] },
};

let server: RunningServer;
let client: GuardClient;
beforeAll(async () => {
  server = await startRealServer();
  client = server.client;
  await client.initAgent({ agent_name: 'mail-bot' });
  await addControl(client, 'mail-bot', 'mark-untrusted', MARK);
});
afterAll(async () => {
  await server.close();
});

describe('GuardClient.getSession: ids a URL path would rewrite', () => {
  it('refuses the session ids "." and ".." (a URL resolves them away, so no GET could read them back) and reads back ids that merely hold dots', async () => {
    const evaluate = (id: string) =>
      client.evaluate({ agent_name: 'mail-bot', stage: 'post', session_id: id, step: { type: 'tool', name: 'fetch_url', input: {} } });
    for (const id of ['.', '..']) {
      const refused = await evaluate(id).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ApiError);
      expect({ id, status: (refused as ApiError).status, fields: (refused as ApiError).problem?.errors?.map((e) => e.field) }).toEqual({ id, status: 422, fields: ['session_id'] });
    }
    const readable = ['...', './x', '../x', 'x/..', '.x', '%2e', '%2E%2E', '.%2e'];
    for (const id of readable) expect((await evaluate(id)).session).toEqual({ id, labels: ['untrusted_content'] });
    for (const id of readable) {
      const info = await client.getSession(id, 'mail-bot').catch((e: unknown) => e);
      expect({ id, session_id: (info as { session_id?: string }).session_id }).toEqual({ id, session_id: id });
    }
  });
});
