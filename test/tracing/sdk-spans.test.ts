/**
 * The SDK in an agent that has OpenTelemetry: a real BasicTracerProvider registered
 * globally with an AsyncLocalStorage context manager, the real server (SQLite file, real
 * socket) exporting to a real OTLP/HTTP receiver.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { context, createTraceState, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { GuardClient } from '../../src/client/index.js';
import { init, type GuardAgent } from '../../src/sdk/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { addControl } from '../sdk/real-server.js';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.js';

let otlp: OtlpReceiver;
let server: TestServer;
let url: string;
let root: string;
let agentSpans: InMemorySpanExporter;
let provider: BasicTracerProvider;
const agents: GuardAgent[] = [];

beforeEach(async () => {
  otlp = await startOtlpReceiver();
  root = mkdtempSync(join(tmpdir(), 'guardctl-otel-sdk-'));
  server = await startTestServer({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url }, config: { databaseUrl: join(root, 'guard.db') }, observability: {}, listen: true });
  url = server.url;
  const client = new GuardClient({ serverUrl: url });
  await client.initAgent({ agent_name: 'sql-bot' });
  await addControl(client, 'sql-bot', 'block-drop', {
    execution: 'sdk',
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
    action: { decision: 'deny' },
  });
  await addControl(client, 'sql-bot', 'deny-secret-output', {
    execution: 'server',
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['post'] },
    selector: { path: 'output' },
    evaluator: { name: 'list', config: { values: ['secret'], match_mode: 'contains' } },
    action: { decision: 'deny' },
  });
  // The agent's own OpenTelemetry, as an instrumented agent sets it up.
  agentSpans = new InMemorySpanExporter();
  provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(agentSpans)] });
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});

afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.shutdown();
  trace.disable();
  context.disable();
  await provider.shutdown();
  await server.close();
  await otlp.close();
  rmSync(root, { recursive: true, force: true });
});

async function agent(options: Partial<Parameters<typeof init>[0]> = {}): Promise<GuardAgent> {
  const guard = await init({ agentName: 'sql-bot', serverUrl: url, refreshIntervalSeconds: 0, events: false, ...options });
  agents.push(guard);
  return guard;
}

/** Runs `fn` inside the agent's tool span, a child of a remote parent carrying a tracestate. */
function inToolSpan<T>(fn: (span: Span) => Promise<T>): Promise<T> {
  const remote = trace.setSpanContext(context.active(), {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: 1,
    isRemote: true,
    traceState: createTraceState('vendor=agent'),
  });
  return trace.getTracer('agent').startActiveSpan('tool run_sql', {}, remote, async (span) => {
    try {
      return await fn(span);
    } finally {
      span.end();
    }
  });
}

it("makes the agent's tool span the parent of the server's guardctl.evaluate span, and of its own in-process span", async () => {
  const guard = await agent();
  const { tool, post, pre } = await inToolSpan(async (span) => ({
    tool: span.spanContext(),
    pre: await guard.evaluate({ type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } }, 'pre'),
    post: await guard.evaluate({ type: 'tool', name: 'run_sql', input: { query: 'select 1' }, output: 'the secret rows' }, 'post'),
  }));
  expect(pre.decision).toBe('deny');
  expect(post.decision).toBe('deny');

  await server.tracing!.forceFlush();
  const [remote] = await otlp.waitFor((s) => s.length >= 1);
  expect(remote).toMatchObject({ name: 'guardctl.evaluate', traceId: tool.traceId, parentSpanId: tool.spanId, traceState: 'vendor=agent' });
  expect(remote!.attributes).toMatchObject({ 'guardctl.agent': 'sql-bot', 'guardctl.stage': 'post', 'guardctl.decision': 'deny', 'guardctl.controls.matched': ['deny-secret-output'] });

  // The execution: sdk control ran in the agent's process: its span is there, under the tool span.
  const local = agentSpans.getFinishedSpans().filter((s) => s.name === 'guardctl.evaluate');
  expect(local).toHaveLength(1);
  expect(local[0]!.spanContext().traceId).toBe(tool.traceId);
  expect(local[0]!.parentSpanContext?.spanId).toBe(tool.spanId);
  expect(local[0]!.attributes).toMatchObject({
    'guardctl.agent': 'sql-bot',
    'guardctl.stage': 'pre',
    'guardctl.step.name': 'run_sql',
    'guardctl.decision': 'deny',
    'guardctl.controls.matched': ['block-drop'],
  });
  expect(local[0]!.events.map((e) => [e.name, e.attributes?.['guardctl.control.evaluator']])).toEqual([['guardctl.control.matched', 'regex']]);
  expect(JSON.stringify(local[0]!.attributes)).not.toMatch(/DROP TABLE/i);
});

it('takes a tracer of its own, and with tracer: false neither propagates nor makes spans', async () => {
  const own = new InMemorySpanExporter();
  const ownProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(own)] });
  const chosen = await agent({ tracer: ownProvider.getTracer('chosen') });
  await inToolSpan(() => chosen.evaluate({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre'));
  expect(own.getFinishedSpans().map((s) => s.name)).toEqual(['guardctl.evaluate']);
  expect(agentSpans.getFinishedSpans().map((s) => s.name)).toEqual(['tool run_sql']);

  const off = await agent({ tracer: false });
  const tool = await inToolSpan(async (span) => {
    await off.evaluate({ type: 'tool', name: 'run_sql', input: { query: 'select 1' }, output: 'rows' }, 'post');
    return span.spanContext();
  });
  await server.tracing!.forceFlush();
  const [remote] = await otlp.waitFor((s) => s.length >= 1);
  expect(remote!.traceId).not.toBe(tool.traceId);
  expect(agentSpans.getFinishedSpans().filter((s) => s.name === 'guardctl.evaluate')).toHaveLength(0);
  await ownProvider.shutdown();
});
