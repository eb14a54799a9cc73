// The SDK on a step an ask control holds, against a real server: control() waits for the
// decision and runs the call once approved, raises ApprovalError (never a violation) when
// denied or when its own timeout ends; approval: 'throw' raises at once with the id;
// verdict() says ask with the id.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { GuardAgent} from '../../src/sdk/index.js';
import { ApprovalError, ControlViolationError, init } from '../../src/sdk/index.js';
import type { ControlDataInput } from '../../src/model/index.js';
import { addControl, startRealServer, type RunningServer } from './real-server.js';

const ask: ControlDataInput = {
  scope: { step_types: ['tool'], step_names: ['pay'], stages: ['pre'] },
  selector: { path: 'input.amount' },
  evaluator: { name: 'regex', config: { pattern: '^[1-9][0-9]{4,}$' } },
  action: { decision: 'ask' },
};

let server: RunningServer;
beforeAll(async () => {
  server = await startRealServer();
  await server.client.initAgent({ agent_name: 'payer' });
  await addControl(server.client, 'payer', 'large-payments', ask);
});
afterAll(() => server.close());

async function agentWith(options: Partial<ConstructorParameters<typeof GuardAgent>[0]> = {}): Promise<GuardAgent> {
  return init({ agentName: 'payer', serverUrl: server.url, events: false, refreshIntervalSeconds: 0, ...options });
}

/** Decides the newest pending approval as soon as it appears. */
async function decideNext(verb: 'approve' | 'deny', reason?: string): Promise<string> {
  const pending = await vi.waitFor(
    async () => {
      const [newest] = await server.client.approvals.list({ status: 'pending', agent_name: 'payer', limit: 1 });
      if (!newest) throw new Error('no pending approval yet');
      return newest;
    },
    { timeout: 30_000, interval: 10 },
  );
  await (verb === 'approve' ? server.client.approvals.approve(pending.id, reason) : server.client.approvals.deny(pending.id, reason));
  return pending.id;
}

describe('SDK and approvals', () => {
  it('waits, then runs the call exactly once when approved', async () => {
    const agent = await agentWith();
    let runs = 0;
    const pay = agent.control(async (input: { amount: number }) => (runs++, `paid ${input.amount}`), { type: 'tool', stepName: 'pay' });
    expect(await pay({ amount: 10 })).toBe('paid 10');
    const [paid] = await Promise.all([pay({ amount: 70_000 }), decideNext('approve', 'ok')]);
    expect(paid).toBe('paid 70000');
    expect(runs).toBe(2);
    await agent.shutdown();
  });

  it('raises ApprovalError with the reason when denied: not a violation', async () => {
    const agent = await agentWith();
    let ran = false;
    const pay = agent.control(async (_p: { amount: number }) => void (ran = true), { type: 'tool', stepName: 'pay' });
    const [error] = await Promise.all([pay({ amount: 71_000 }).then(() => null, (e: unknown) => e), decideNext('deny', 'over budget')]);
    expect(error).toBeInstanceOf(ApprovalError);
    expect(error).not.toBeInstanceOf(ControlViolationError);
    expect(error).toMatchObject({ status: 'denied', reason: 'over budget' });
    expect((error as Error).message).toContain('over budget');
    expect(ran).toBe(false);
    await agent.shutdown();
  });

  it('approval: throw raises at once with the id; verdict() says ask with the id', async () => {
    const agent = await agentWith({ approval: 'throw' });
    const pay = agent.control(async (_p: { amount: number }) => 'paid', { type: 'tool', stepName: 'pay' });
    // Without `throw` the call would wait for a decision for ever (no approvalTimeout), past
    // this test's time limit: coming back at all shows it did not wait.
    const error = (await pay({ amount: 72_000 }).catch((e: unknown) => e)) as ApprovalError;
    expect(error).toBeInstanceOf(ApprovalError);
    expect(error.status).toBe('pending');
    expect(error.approvalId).toMatch(/^apr_/);
    const verdict = await agent.verdict({ type: 'tool', name: 'pay', input: { amount: 72_000 } }, 'pre');
    expect(verdict).toMatchObject({ decision: 'ask', approval: { id: error.approvalId, status: 'pending' } });
    expect(verdict.message).toMatch(/Waiting for approval/);
    // Resuming later: approved meanwhile, the same call now runs.
    await server.client.approvals.approve(error.approvalId);
    expect(await pay({ amount: 72_000 })).toBe('paid');
    await agent.shutdown();
  });

  it('approvalTimeout ends the wait with a pending ApprovalError', async () => {
    const agent = await agentWith({ approvalTimeout: 300 });
    const pay = agent.control(async (_p: { amount: number }) => 'paid', { type: 'tool', stepName: 'pay' });
    const started = performance.now();
    const error = (await pay({ amount: 73_000 }).catch((e: unknown) => e)) as ApprovalError;
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    expect(error).toBeInstanceOf(ApprovalError);
    expect(error.status).toBe('pending');
    await agent.shutdown();
  });
});
