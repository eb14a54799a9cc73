/**
 * Approvals (issue #38):
 * - the evaluation of an approved step (the submission that uses its approval: the engine,
 *   then one store transaction) against an allowed step of the same agent and controls,
 *   median latency through app.inject, the two kinds alternated in one run (SQLite file);
 * - time from a person's approval (the approve request answered) to the waiting SDK call
 *   running: a real server on a socket, the SDK's control() long-polling, median of 40.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { GuardClient } from '../src/client/index.js';
import { createDefaultRegistry } from '../src/evaluators/registry.js';
import type { ControlDataInput } from '../src/model/index.js';
import { init } from '../src/sdk/index.js';
import { assembleServer } from '../src/server/assemble.js';
import { loadConfig } from '../src/server/config.js';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';

const ASK: ControlDataInput = {
  scope: { step_types: ['tool'], step_names: ['pay'], stages: ['pre'] },
  selector: { path: 'input.amount' },
  evaluator: { name: 'regex', config: { pattern: '^[1-9][0-9]{4,}$' } },
  action: { decision: 'ask' },
};

async function serverWith(dir: string) {
  const config = loadConfig({ OBSERVABILITY_ENABLED: 'false' }, { host: '127.0.0.1', port: 0, databaseUrl: join(dir, 'guard.db') });
  const server = await assembleServer(config, { registry: createDefaultRegistry(), observability: false });
  await server.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = server.app.server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const client = new GuardClient({ serverUrl: url });
  await client.initAgent({ agent_name: 'payer' });
  const { control_id } = await client.createControl({ name: 'large-payments', data: ASK });
  await client.link('payer', control_id);
  return { server, url, client };
}

const body = (amount: number) => JSON.stringify({ agent_name: 'payer', stage: 'pre', step: { type: 'tool', name: 'pay', input: { amount } } });

async function approvedVsAllowed(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'guardctl-bench-approvals-'));
  const { server, client } = await serverWith(dir);
  try {
    const app = server.app;
    const inject = (payload: string) => app.inject({ method: 'POST', url: '/api/v1/evaluation', payload, headers: { 'content-type': 'application/json' } });
    const allowed: number[] = [];
    const approved: number[] = [];
    for (let i = 0; i < 300; i++) await inject(body(1 + (i % 100)));
    for (let i = 0; i < 400; i++) {
      const amount = 10_000 + i;
      const asked = JSON.parse((await inject(body(amount))).body) as { approval: { id: string } };
      await client.approvals.approve(asked.approval.id);
      let t = performance.now();
      await inject(body(1 + (i % 100)));
      allowed.push(performance.now() - t);
      t = performance.now();
      const used = await inject(body(amount));
      approved.push(performance.now() - t);
      if ((JSON.parse(used.body) as { decision: string }).decision !== 'allow') throw new Error('the approved step was not allowed');
    }
    const a = median(allowed);
    const b = median(approved);
    const note = 'app.inject, one ask control, SQLite file; 400 pairs alternated, medians';
    return [
      { name: 'allowed step evaluation (baseline)', value: a * 1000, unit: 'µs', note },
      { name: 'approved step evaluation (uses its approval)', value: b * 1000, unit: 'µs', note },
      { name: 'approved / allowed evaluation time', value: b / a, unit: 'ratio', note: 'the store transaction that uses the approval is the difference' },
    ];
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function approvalToRunning(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'guardctl-bench-approvals-'));
  const { server, url, client } = await serverWith(dir);
  const agent = await init({ agentName: 'payer', serverUrl: url, events: false, refreshIntervalSeconds: 0 });
  try {
    const delays: number[] = [];
    for (let i = 0; i < 40; i++) {
      let ranAt = 0;
      const pay = agent.control(async (_p: { amount: number }) => void (ranAt = performance.now()), { type: 'tool', stepName: 'pay' });
      const call = pay({ amount: 20_000 + i });
      let id: string | undefined;
      while (id === undefined) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        id = (await client.approvals.list({ status: 'pending', limit: 1 }))[0]?.id;
      }
      // Let the SDK's long-poll reach the server before the person answers.
      await new Promise((resolve) => setTimeout(resolve, 30));
      await client.approvals.approve(id);
      const approvedAt = performance.now();
      await call;
      delays.push(ranAt - approvedAt);
    }
    const m = median(delays);
    return [
      {
        name: 'approval to the waiting SDK call running',
        value: m,
        unit: 'ms',
        goal: '< 50 ms',
        pass: m < 50,
        note: 'median of 40: approve answered -> long-poll answered -> step submitted again -> the call runs; one replica, SQLite file',
      },
    ];
  } finally {
    await agent.shutdown();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const benchmarks: Benchmark[] = [
  { name: 'approvals: approved vs allowed evaluation', run: approvedVsAllowed },
  { name: 'approvals: approval to running', run: approvalToRunning },
];

export const section: BenchSection = {
  name: 'Approvals',
  chapter: 'Server',
  method: `The first pair alternates an allowed step (the baseline) and an approved one (the
submission that uses its approval: the engine, then one store transaction) through
\`app.inject\` on a SQLite file, 400 pairs, medians. The second times, on a real socket, the
interval from the approve request being answered to the SDK's waiting \`control()\` call
running (its long-poll answered, the step submitted again and allowed), median of 40.`,
  benchmarks,
};
