/**
 * Real evaluators made to fail, one way per evaluator kind and timing, for the on_error
 * tests of the path with execution records (engine with collectExecutions, the SDK with
 * events, the server with observability on):
 * - regex and list, synchronously: the selected value holds a BigInt, which JSON cannot
 *   write (an SDK caller can pass one; a step that came as JSON cannot hold one);
 * - regex, asynchronously: a text long enough to be searched on a thread, and the search
 *   pool closed while the search waits (what a server shutting down does to it);
 * - ai_vendor.scorer, asynchronously: a real local HTTP scorer answering 500;
 * - a plugin loaded from a file (GUARD_EVALUATORS), throwing or rejecting.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAiVendorScorer, createDefaultRegistry, loadEvaluatorPlugins, type EvaluatorRegistry } from '../../src/evaluators/index.js';
import { OFFLOAD_MIN_BYTES } from '../../src/evaluators/regex/re2.js';
import { searchPool } from '../../src/evaluators/regex/search-pool.js';
import type { ControlDataInput, Decision, OnError } from '../../src/model/index.js';

export interface FailureCase {
  /** `regex sync`, `plugin async`, ... */
  label: string;
  evaluator: { name: string; config: Record<string, unknown> };
  /** The step input that makes it fail (selected with `input`). */
  input: unknown;
  /** Whether the evaluation answers with a promise. */
  async: boolean;
  /** What the error message says. */
  error: RegExp;
  /** Whether the failure needs the regex search pool closed once the search is queued. */
  closesPool?: boolean;
  /** Whether a JSON step (an HTTP request) can carry the failing input. */
  json: boolean;
}

/** Text long enough to be searched off the event loop, without the literal-free pattern matching it. */
const LONG_TEXT = 'a'.repeat(OFFLOAD_MIN_BYTES * 2);

/** The scorer endpoint is the registry's own (startFailingWorld), so configs name no url. */
export function failureCases(): FailureCase[] {
  return [
    {
      label: 'regex sync',
      evaluator: { name: 'regex', config: { pattern: '(?i)drop\\s+table' } },
      input: { query: 'drop table t', rows: 10n },
      async: false,
      error: /BigInt/,
      json: false,
    },
    {
      label: 'regex async',
      // No literal every match must hold, so the prefilter cannot answer without RE2.
      evaluator: { name: 'regex', config: { pattern: '[0-9]{6}' } },
      input: LONG_TEXT,
      async: true,
      error: /regex search pool closed/,
      closesPool: true,
      json: true,
    },
    {
      label: 'list sync',
      evaluator: { name: 'list', config: { values: ['drop'], match_mode: 'contains' } },
      input: { query: 'drop table t', rows: 10n },
      async: false,
      error: /BigInt/,
      json: false,
    },
    {
      label: 'ai_vendor async',
      evaluator: { name: 'ai_vendor.scorer', config: { metric: 'toxicity', operator: 'gt', target_value: 0.5 } },
      input: 'you are all fools',
      async: true,
      error: /scorer answered HTTP 500/,
      json: true,
    },
    {
      label: 'plugin sync',
      evaluator: { name: 'acme.throws', config: {} },
      input: 'anything',
      async: false,
      error: /plugin check failed/,
      json: true,
    },
    {
      label: 'plugin async',
      evaluator: { name: 'acme.rejects', config: {} },
      input: 'anything',
      async: true,
      error: /plugin check rejected/,
      json: true,
    },
  ];
}

/** [on_error, action, fires, decision]: what an error does, by the control's on_error and action. */
export type OnErrorRow = [onError: OnError | undefined, decision: Decision, fires: boolean, result: 'allow' | 'deny' | 'steer'];

export const ON_ERROR_ROWS: OnErrorRow[] = [
  [undefined, 'deny', true, 'deny'], // deny and steer fail closed by default
  ['deny', 'deny', true, 'deny'],
  [undefined, 'steer', true, 'steer'],
  ['deny', 'warn', true, 'allow'], // fires, but warn never blocks
  ['allow', 'deny', false, 'allow'],
  [undefined, 'log', false, 'allow'],
];

/** A control's data for one case and row, in scope for tool `t` at pre. */
export function failingControl(c: FailureCase, [onError, decision]: OnErrorRow, execution: 'server' | 'sdk' = 'server'): ControlDataInput {
  return {
    execution,
    scope: { step_types: ['tool'], step_names: ['t'], stages: ['pre'] },
    selector: { path: 'input' },
    evaluator: { name: c.evaluator.name, config: { ...c.evaluator.config, ...(onError ? { on_error: onError } : {}) } },
    action: decision === 'steer' ? { decision, steering_context: { message: 'ask again' } } : { decision },
  };
}

/** Closes the shared regex search pool: a search queued before fails. The next search starts new threads. */
export async function closeSearchPool(): Promise<void> {
  await searchPool().close();
}

export interface FailingWorld {
  registry: EvaluatorRegistry;
  /** The scorer's URL: answers every request with HTTP 500. */
  scorerUrl: string;
  /** Requests the scorer received. */
  scorerCalls(): number;
  close(): Promise<void>;
}

const PLUGIN = `export default [
  {
    name: 'acme.throws',
    description: 'fails synchronously',
    configSchema: { type: 'object', additionalProperties: false },
    compile: () => () => { throw new Error('plugin check failed'); },
  },
  {
    name: 'acme.rejects',
    description: 'fails asynchronously',
    configSchema: { type: 'object', additionalProperties: false },
    compile: () => async () => { await new Promise((r) => setTimeout(r, 1)); throw new Error('plugin check rejected'); },
  },
];
`;

/** A registry with the built-ins, a vendor scorer pointed at a failing local server, and the failing plugin file. */
export async function startFailingWorld(): Promise<FailingWorld> {
  let calls = 0;
  const server: Server = createServer((req, res) => {
    calls++;
    req.resume();
    req.on('end', () => {
      res.statusCode = 500;
      res.end('{"error":"scoring backend down"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const scorerUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/score`;
  const dir = mkdtempSync(join(tmpdir(), 'guard-failing-plugin-'));
  writeFileSync(join(dir, 'failing.mjs'), PLUGIN);
  const registry = createDefaultRegistry({ extra: [createAiVendorScorer({ apiKey: 'test-key', url: scorerUrl })] });
  await loadEvaluatorPlugins(registry, ['./failing.mjs'], dir);
  return {
    registry,
    scorerUrl,
    scorerCalls: () => calls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
