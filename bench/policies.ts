/**
 * Policies: (1) evaluation for an agent guarded through 20 policies against the same 20
 * controls linked directly (baseline, same run, alternating rounds); (2) GitOps at the
 * issue's scale, 10,000 agents and 200 policies, planned and applied into an empty
 * in-process server on a SQLite file, then the no-op plan; then the server alone, restarted
 * in a process of its own on that file, evaluates once for each agent and reports its memory.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GuardClient } from '../src/client/index.js';
import { createDefaultRegistry } from '../src/evaluators/registry.js';
import { loadDirectory } from '../src/gitops/directory.js';
import { applyToServer, planAgainstServer } from '../src/gitops/sync.js';
import { loadConfig } from '../src/server/config.js';
import { startServer } from '../src/server/start.js';
import type { FastifyInstance } from 'fastify';
import { dropSchemas, freshSchema, PG_URL, pgReachable } from './pg-schemas.js';
import { serverMemory } from './server-memory.js';
import { startServerProcess } from './server-process.js';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';

const POLICIES_FOR_EVAL = 20;
const AGENTS = 10_000;
const POLICIES = 200;
const CONTROLS = 200;
const TEAMS = 50;

const control = (i: number) => `kind: Control
name: c-${i}
scope: { step_types: [tool], stages: [pre] }
selector: { path: input.text }
evaluator: { name: regex, config: { pattern: '(?i)\\bsecret-${i}\\b' } }
action: { decision: ${i % 2 === 0 ? 'deny' : 'log'} }
`;

/** Evaluations per second for one agent through the app's request path (inject: no socket noise), over `ms`. */
async function evaluationRate(app: FastifyInstance, agent: string, ms: number): Promise<number> {
  const payload = { agent_name: agent, stage: 'pre', step: { type: 'tool', name: 'run', input: { text: 'nothing secret here' } } };
  const until = performance.now() + ms;
  let n = 0;
  const start = performance.now();
  while (performance.now() < until) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/evaluation', payload });
    if (res.statusCode !== 200) throw new Error(`evaluation answered ${res.statusCode}`);
    n++;
  }
  return n / ((performance.now() - start) / 1000);
}

async function evaluationThroughPolicies(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'guardctl-bench-policies-'));
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATABASE_URL: ':memory:', OBSERVABILITY_ENABLED: 'false' });
  const server = await startServer(config, { handleSignals: false, logger: false, print: () => {}, env: {} });
  try {
    const docs: string[] = [];
    for (let i = 0; i < POLICIES_FOR_EVAL; i++) docs.push(control(i));
    const names = Array.from({ length: POLICIES_FOR_EVAL }, (_, i) => `c-${i}`);
    docs.push(`kind: Agent\nagent_name: linked\ncontrols: [${names.join(', ')}]\n`);
    docs.push(`kind: Agent\nagent_name: by-policy\nlabels: { tier: gold }\n`);
    for (let i = 0; i < POLICIES_FOR_EVAL; i++) docs.push(`kind: Policy\nname: p-${i}\ncontrols: [c-${i}]\nagents: { match_labels: { tier: gold } }\n`);
    mkdirSync(join(dir, 'controls'));
    writeFileSync(join(dir, 'controls', 'all.yaml'), docs.join('---\n'));
    const client = new GuardClient({ serverUrl: server.url, timeoutMs: 60_000 });
    const loaded = await loadDirectory(join(dir, 'controls'), createDefaultRegistry());
    const applied = await applyToServer(client, await planAgainstServer(client, loaded, {}));
    if (applied.failed) throw new Error(`apply failed: ${applied.failed.error}`);
    const direct: number[] = [];
    const through: number[] = [];
    await evaluationRate(server.app, 'linked', 300);
    await evaluationRate(server.app, 'by-policy', 300);
    // Short alternating rounds, so that load from elsewhere on the machine falls on both sides alike.
    for (let round = 0; round < 15; round++) {
      direct.push(await evaluationRate(server.app, 'linked', 300));
      through.push(await evaluationRate(server.app, 'by-policy', 300));
    }
    const ratio = median(through) / median(direct);
    return [
      {
        name: `policies: evaluation through ${POLICIES_FOR_EVAL} policies vs the same controls linked`,
        value: ratio,
        unit: 'x',
        goal: '>= 0.95',
        pass: ratio >= 0.95,
        note: `median of 15 alternating rounds: ${median(through).toFixed(0)} vs ${median(direct).toFixed(0)} evaluations/s (inject)`,
      },
    ];
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** 200 controls, 10,000 agents in 50 teams (some PCI), 200 policies by label, name and expression. */
function writeScaleDirectory(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'controls.yaml'), Array.from({ length: CONTROLS }, (_, i) => control(i)).join('---\n'));
  const agents: string[] = [];
  for (let a = 0; a < AGENTS; a++) agents.push(`kind: Agent\nagent_name: agent-${a}\nlabels: { team: t${a % TEAMS}, pci: "${a % 7 === 0}" }\n`);
  writeFileSync(join(dir, 'agents.yaml'), agents.join('---\n'));
  const policies: string[] = [];
  for (let p = 0; p < POLICIES; p++) {
    const agentsOf =
      p % 4 === 0
        ? `{ match_labels: { team: t${p % TEAMS} } }`
        : p % 4 === 1
          ? `{ match_expressions: [{ key: team, operator: In, values: [t${p % TEAMS}, t${(p + 1) % TEAMS}] }, { key: pci, operator: In, values: ["true"] }] }`
          : p % 4 === 2
            ? `{ names: [agent-${p}, agent-${p + 1}, agent-${p + 2}] }`
            : `{ match_labels: { team: t${p % TEAMS}, pci: "false" } }`;
    policies.push(`kind: Policy\nname: policy-${p}\ncontrols: [c-${p % CONTROLS}, c-${(p * 7) % CONTROLS}]\nagents: ${agentsOf}\n`);
  }
  writeFileSync(join(dir, 'policies.yaml'), policies.join('---\n'));
}

async function atScale(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'guardctl-bench-policies-scale-'));
  // A SQLite file, so that the server's memory is then read alone, in a process of its own, on what was applied.
  const db = join(dir, 'policies.db');
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATABASE_URL: db, OBSERVABILITY_ENABLED: 'false' });
  const server = await startServer(config, { handleSignals: false, logger: false, print: () => {}, env: {} });
  let closed = false;
  try {
    writeScaleDirectory(join(dir, 'controls'));
    const client = new GuardClient({ serverUrl: server.url, timeoutMs: 120_000 });
    const registry = createDefaultRegistry();
    const loaded = await loadDirectory(join(dir, 'controls'), registry);
    if (loaded.diagnostics.some((d) => d.severity === 'error')) throw new Error('the generated directory is invalid');
    const t0 = performance.now();
    const first = await planAgainstServer(client, loaded, {});
    const planMs = performance.now() - t0;
    const t1 = performance.now();
    const applied = await applyToServer(client, first);
    const applyMs = performance.now() - t1;
    if (applied.failed) throw new Error(`apply failed: ${applied.failed.error}`);
    const t2 = performance.now();
    const noop = await planAgainstServer(client, loaded, {});
    const noopMs = performance.now() - t2;
    await server.close();
    closed = true;
    const alone = await serverMemory(db, AGENTS);
    const rssMb = alone.rss / 2 ** 20;
    const reach = first.plan.operations.filter((o) => o.op === 'create_policy').reduce((n, o) => n + (o.op === 'create_policy' ? o.reach.agents : 0), 0);
    return [
      {
        name: `policies: plan ${AGENTS} agents, ${POLICIES} policies into an empty server`,
        value: planMs / 1000,
        unit: 's',
        goal: '< 5 s',
        pass: planMs < 5000,
        note: `${first.plan.operations.length} operations; ${reach} policy memberships`,
      },
      { name: 'policies: apply that plan', value: applyMs / 1000, unit: 's', goal: '< 5 s', pass: applyMs < 5000, note: `${applied.writes} writes` },
      {
        name: 'policies: no-op plan afterwards (fetch + plan)',
        value: noopMs / 1000,
        unit: 's',
        goal: '< 5 s',
        pass: noopMs < 5000 && noop.plan.operations.length === 0,
        note: `${noop.plan.operations.length} operations`,
      },
      {
        name: `policies: server memory, ${AGENTS} agents and ${POLICIES} policies, every agent's set compiled`,
        value: Math.round(rssMb),
        unit: 'MB',
        goal: '< 300 MB',
        pass: rssMb < 300,
        note: `the server alone, restarted on the applied SQLite file, after one evaluation per agent; JS heap ${Math.round(alone.heap / 2 ** 20)} MB`,
      },
    ];
  } finally {
    if (!closed) await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const HANDOFFS = 100;
const DROP = (agent: string) => JSON.stringify({ agent_name: agent, stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE t' } } });

/**
 * A label change through replica A to evaluation on replica B: two server processes on one
 * PostgreSQL schema, a policy selecting `tier=prod`; per agent, registered as `tier=dev`
 * (B allows), then PATCHed to `tier=prod` through A, then B is asked again and again until
 * it denies. Reported: the median and the largest time from A's answer to B's first deny.
 */
async function labelChangeAcrossReplicas(): Promise<BenchRow[]> {
  if (!(await pgReachable())) return [{ name: 'policies: label change on A to evaluation on B', value: 0, unit: '', note: `skipped: ${PG_URL} unreachable` }];
  const schemas: string[] = [];
  const url = await freshSchema(schemas, 'guard_bench_pol');
  const a = await startServerProcess({ kind: 'guard', controls: 1, databaseUrl: url });
  const b = await startServerProcess({ kind: 'guard', controls: 1, databaseUrl: url, seed: false });
  // A server process's url is its evaluation endpoint.
  const call = async (evaluation: string, method: string, path: string, body: string): Promise<{ status: number; json: { decision?: string } }> => {
    const res = await fetch(new URL(path, evaluation), { method, headers: { 'content-type': 'application/json' }, body });
    return { status: res.status, json: (await res.json()) as { decision?: string } };
  };
  try {
    const policy = await call(a.url, 'PUT', '/api/v1/policies', JSON.stringify({ name: 'prod-baseline', controls: ['bench-one'], agents: { match_labels: { tier: 'prod' } } }));
    if (policy.status !== 201) throw new Error(`creating the policy answered ${policy.status}: ${JSON.stringify(policy.json)}`);
    const times: number[] = [];
    for (let i = 0; i < HANDOFFS; i++) {
      const agent = `replica-agent-${i}`;
      await call(a.url, 'POST', '/api/v1/agents/initAgent', JSON.stringify({ agent_name: agent, labels: { tier: 'dev' } }));
      if ((await call(b.url, 'POST', '/api/v1/evaluation', DROP(agent))).json.decision !== 'allow') throw new Error(`${agent} was denied before its label changed`);
      const patched = await call(a.url, 'PATCH', `/api/v1/agents/${agent}`, JSON.stringify({ labels: { tier: 'prod' } }));
      if (patched.status !== 200) throw new Error(`PATCH answered ${patched.status}`);
      const t0 = performance.now();
      while ((await call(b.url, 'POST', '/api/v1/evaluation', DROP(agent))).json.decision !== 'deny') {
        if (performance.now() - t0 > 10_000) throw new Error(`B never denied ${agent} after its label changed`);
      }
      times.push(performance.now() - t0);
    }
    const worst = Math.max(...times);
    return [
      {
        name: 'policies: label change on A to evaluation on B (median)',
        value: median(times),
        unit: 'ms',
        goal: '< 1000 ms',
        pass: worst < 1000,
        note: `${HANDOFFS} agents; the largest: ${worst.toFixed(1)} ms; B asked again and again from A's answer until it denied`,
      },
    ];
  } finally {
    await b.close();
    await a.close();
    await dropSchemas(schemas);
  }
}

export const benchmarks: Benchmark[] = [
  { name: 'policies-evaluation', run: evaluationThroughPolicies },
  { name: 'policies-scale', run: atScale },
  { name: 'policies-replicas', run: labelChangeAcrossReplicas },
];

export const section: BenchSection = {
  name: 'Policies',
  chapter: 'GitOps, reload, testing',
  method: `Evaluation for an agent guarded through 20 policies against the same 20 controls linked
directly (the baseline), alternating rounds in the same run. GitOps at scale: 10,000 agents and
200 policies planned and applied into an empty in-process server (on a SQLite file), then the
no-op plan. Memory: the server alone, restarted in a process of its own on that file, after one
evaluation for each of the 10,000 agents (every agent's set compiled), garbage collected.
Across replicas: two server processes on one PostgreSQL schema and a policy selecting
\`tier=prod\`; an agent registered as \`tier=dev\` is PATCHed to \`tier=prod\` through A, then B
is asked until it denies; reported is the median time from A's answer to B's first deny.`,
  benchmarks,
};
