/**
 * on_error on the path with execution records: the engine with collectExecutions (what the
 * server runs with observability on, its default) and the SDK with events. That path runs
 * each control on its own code (runDetailed in evaluate.ts, to time it and keep an
 * excerpt), so it must decide an evaluator error exactly as the plain path does: a deny
 * control whose evaluator fails still denies. Every evaluator kind, synchronous and
 * asynchronous failures.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { compileControls, evaluateStep, type EvaluationOutcome } from '../../src/engine/index.js';
import type { ControlRecord, EvaluationResult, Step } from '../../src/model/index.js';
import { GuardAgent } from '../../src/sdk/index.js';
import { startRealServer, type RunningServer } from '../sdk/real-server.js';
import {
  closeSearchPool,
  failingControl,
  failureCases,
  ON_ERROR_ROWS,
  startFailingWorld,
  type FailingWorld,
  type FailureCase,
  type OnErrorRow,
} from './failing-evaluators.js';
import { control } from './helpers.js';

let world: FailingWorld;
beforeAll(async () => {
  world = await startFailingWorld();
});
afterAll(async () => {
  await world.close();
});

const KINDS = failureCases().map((c) => c.label);
const caseOf = (label: string): FailureCase => failureCases().find((x) => x.label === label)!;
const table = KINDS.flatMap((kind) => ON_ERROR_ROWS.map((row) => [kind, row[0] ?? 'default', ...row.slice(1)] as [string, ...OnErrorRow]));
const rowOf = (onError: string, rest: unknown[]): OnErrorRow => [onError === 'default' ? undefined : onError, ...rest] as OnErrorRow;

/** Settles an evaluation, closing the search pool first when the case needs its search to fail. */
async function settle<T>(pending: T | Promise<T>, c: FailureCase): Promise<T> {
  if (c.closesPool) await closeSearchPool();
  return pending;
}

function expectDecided(result: EvaluationResult, c: FailureCase, [, , fires, decision]: OnErrorRow): void {
  expect(result.decision).toBe(decision);
  const [failed] = fires ? result.matches : result.errors;
  expect(fires ? result.errors : result.matches).toEqual([]);
  expect(failed?.error).toMatch(c.error);
  expect(failed?.result.matched).toBe(fires);
}

describe('on_error through the execution-record path (engine, collectExecutions)', () => {
  it.each(table)('%s: on_error %s on a %s control -> fires %s, decision %s (not answered as on_error allow)', async (kind, onError, ...rest) => {
    const row = rowOf(onError as string, rest);
    const c = caseOf(kind);
    const set = compileControls([control(`fails-${kind}`, failingControl(c, row))], world.registry);
    expect(set.skipped).toEqual([]);
    const step: Step = { type: 'tool', name: 't', input: c.input };

    const pending = evaluateStep(set, step, 'pre', { collectExecutions: true });
    expect(pending instanceof Promise).toBe(c.async);
    const { result, executions } = await settle<EvaluationOutcome>(pending, c);
    expectDecided(result, c, row);
    expect(executions).toHaveLength(1);
    expect(executions![0]).toMatchObject({ matched: row[2], error_message: expect.stringMatching(c.error) });

    // The plain path (no records) decides the same.
    const plain = await settle<EvaluationOutcome>(evaluateStep(set, step, 'pre'), c);
    expect(plain.result).toEqual(result);
  });
});

describe('on_error in the SDK with events on', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startRealServer();
  });
  afterAll(async () => {
    await server.close();
  });

  function record(id: number, name: string, data: ReturnType<typeof failingControl>): ControlRecord {
    const at = new Date().toISOString();
    const parsed = control(name, data, id).data;
    return { control_id: id, name, enabled: true, data: parsed, managed_by: null, source: null, created_at: at, updated_at: at };
  }

  // A deny control fails closed by default, a deny with on_error allow fails open: both
  // decided in process, the failure sent as an event.
  const sdkTable = table.filter(([, onError, decision]) => decision === 'deny' && onError !== 'deny');

  it.each(sdkTable)('%s: on_error %s on a %s control -> fires %s, decision %s, and the event says so', async (kind, onError, ...rest) => {
    const row = rowOf(onError as string, rest);
    const c = caseOf(kind);
    const agentName = `sdk-${kind.replace(/\W+/g, '-')}-${row[0] ?? 'default'}`;
    const agent = new GuardAgent({ agentName, serverUrl: server.url, registry: world.registry, refreshIntervalSeconds: 0, eventFlushIntervalSeconds: 60, logger: { info() {}, warn() {} } });
    try {
      agent.setControls([record(1, `fails-${kind}`, failingControl(c, row, 'sdk'))]);
      const evaluation = agent.evaluate({ type: 'tool', name: 't', input: c.input }, 'pre');
      const result = await settle(evaluation, c);
      expectDecided(result, c, row);
      expect(agent.pendingEvents).toBe(1);
      await agent.shutdown();
      // The server writes what it received on its flush timer.
      await vi.waitFor(async () => {
        const { events } = await server.client.queryEvents({ agent_name: agentName, limit: 10 });
        expect(events).toHaveLength(1);
        expect(events[0]).toMatchObject({ matched: row[2], error_message: expect.stringMatching(c.error), action: 'deny' });
      }, { timeout: 30_000 });
    } finally {
      await agent.shutdown();
    }
  });
});
