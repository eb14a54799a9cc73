// `guardctl approvals` in-process against a real server on a real socket: option parsing,
// list, show, approve and deny, and the errors a person meets.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { approvalsActionOf, runApprovals, type ApprovalsOptions } from '../../cli/commands/approvals.js';
import { UserError } from '../../src/errors.js';
import { startTestServer, type TestServer } from '../server/helpers.js';
import { ADMIN, APPROVER, evaluate, KEYS, payment, REGULAR, seedPayments } from '../approvals/helpers.js';

let server: TestServer;
let url: string;
beforeAll(async () => {
  server = await startTestServer({ env: KEYS });
  url = await server.app.listen({ host: '127.0.0.1', port: 0 });
  await seedPayments(server.app, { 'x-api-key': ADMIN });
});
afterAll(() => server.close());

async function run(words: string[], options: Partial<ApprovalsOptions>, key: string): Promise<string> {
  const out: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (out.push(String(chunk)), true));
  try {
    const full = { format: 'text', server: url, apiKey: key, ...options } as ApprovalsOptions;
    expect(await runApprovals(approvalsActionOf(words, full), full)).toBe(0);
  } finally {
    spy.mockRestore();
  }
  return out.join('');
}

describe('guardctl approvals', () => {
  it('parses its words and options', () => {
    expect(approvalsActionOf([], {})).toEqual({ kind: 'list', status: undefined, agent: undefined, limit: 20 });
    expect(approvalsActionOf(['approve', 'apr_1'], {})).toEqual({ kind: 'approve', id: 'apr_1', reason: undefined });
    expect(() => approvalsActionOf(['approve'], {})).toThrow(UserError);
    expect(() => approvalsActionOf(['deny', 'apr_1'], {})).toThrow(/needs --reason/);
    expect(() => approvalsActionOf(['deny', 'apr_1'], { reason: 'x'.repeat(1001) })).toThrow(/limit is 1000/);
    expect(() => approvalsActionOf(['allow', 'apr_1'], {})).toThrow(/unknown approvals action "allow"/);
    expect(() => approvalsActionOf(['show', 'a', 'b'], {})).toThrow(/one approval id/);
  });

  it('lists, shows, approves and denies against a real server', async () => {
    const first = (await evaluate(server.app, payment(64_000), { 'x-api-key': REGULAR })).approval.id as string;
    const second = (await evaluate(server.app, payment(65_000), { 'x-api-key': REGULAR })).approval.id as string;
    const listed = await run(['list'], { status: 'pending' }, REGULAR);
    expect(listed).toContain(first);
    expect(listed).toContain(second);
    expect(await run(['show', first], {}, REGULAR)).toContain('"amount": 64000');
    expect(await run(['approve', first], { reason: 'ok' }, APPROVER)).toMatch(new RegExp(`${first}\\s+approved`));
    const json = JSON.parse(await run(['deny', second], { reason: 'too much', format: 'json' }, ADMIN));
    expect(json.approvals[0]).toMatchObject({ id: second, status: 'denied', reason: 'too much' });
    // A regular key cannot decide: the person is told which key would.
    await expect(run(['approve', second], {}, REGULAR)).rejects.toThrow(/GUARD_APPROVER_API_KEYS/);
    await expect(run(['approve', first], {}, ADMIN)).rejects.toMatchObject({ status: 409 });
  });
});
