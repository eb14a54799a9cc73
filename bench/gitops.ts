/**
 * GitOps at scale: a generated directory of 1,000 controls and 100 agents planned and
 * applied into an empty in-process server (SQLite :memory:), then the no-op plan.
 * Baseline: one full read of the server state in the same run (what every plan must do).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GuardClient } from '../src/client/index.js';
import { createDefaultRegistry } from '../src/evaluators/registry.js';
import { loadDirectory } from '../src/gitops/directory.js';
import { fetchActualState } from '../src/gitops/fetch-state.js';
import { fingerprintOf } from '../src/gitops/fingerprint.js';
import { applyToServer, planAgainstServer } from '../src/gitops/sync.js';
import { loadConfig } from '../src/server/config.js';
import { startServer } from '../src/server/start.js';
import type { Benchmark, BenchRow, BenchSection } from './harness.js';

const CONTROLS = 1000;
const AGENTS = 100;
const LINKS_PER_AGENT = 10;

/** Ten files of 100 controls each, and one file of agents each linking ten controls. */
export function writeGeneratedDirectory(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const decisions = ['deny', 'warn', 'log', 'allow'];
  for (let f = 0; f < CONTROLS / 100; f++) {
    const docs: string[] = [];
    for (let i = f * 100; i < (f + 1) * 100; i++) {
      docs.push(`kind: Control
name: generated-${String(i).padStart(4, '0')}
description: Generated control ${i}
scope:
  step_types: [tool]
  step_names: [tool_${i % 50}]
  stages: [pre]
selector:
  path: input.text
evaluator:
  name: ${i % 3 === 0 ? 'list' : 'regex'}
  config: ${i % 3 === 0 ? `{ values: [word${i}, other${i}] }` : `{ pattern: '(?i)\\bsecret-${i}\\b' }`}
action:
  decision: ${decisions[i % decisions.length]}
  metadata: { index: ${i} }
`);
    }
    writeFileSync(join(dir, `controls-${f}.yaml`), docs.join('---\n'));
  }
  const agents: string[] = [];
  for (let a = 0; a < AGENTS; a++) {
    const links = Array.from({ length: LINKS_PER_AGENT }, (_, k) => `generated-${String((a * LINKS_PER_AGENT + k) % CONTROLS).padStart(4, '0')}`);
    agents.push(`kind: Agent\nagent_name: agent-${a}\nagent_description: Generated agent ${a}\ncontrols: [${links.join(', ')}]\n`);
  }
  writeFileSync(join(dir, 'agents.yaml'), agents.join('---\n'));
}

async function run(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'guardctl-bench-gitops-'));
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATABASE_URL: ':memory:', OBSERVABILITY_ENABLED: 'false' });
  const server = await startServer(config, { handleSignals: false, logger: false, print: () => {}, env: {} });
  try {
    writeGeneratedDirectory(join(dir, 'controls'));
    const client = new GuardClient({ serverUrl: server.url, timeoutMs: 60_000 });
    const registry = createDefaultRegistry();

    const t0 = performance.now();
    const loaded = await loadDirectory(join(dir, 'controls'), registry);
    if (loaded.diagnostics.some((d) => d.severity === 'error')) throw new Error('the generated directory is invalid');
    const first = await planAgainstServer(client, loaded, {});
    const applied = await applyToServer(client, first);
    const applyMs = performance.now() - t0;
    if (applied.failed) throw new Error(`apply failed: ${applied.failed.error}`);

    const tRead = performance.now();
    const state = await fetchActualState(client);
    const readMs = performance.now() - tRead;
    const before = fingerprintOf(state);

    const t1 = performance.now();
    const reloaded = await loadDirectory(join(dir, 'controls'), registry);
    const noop = await planAgainstServer(client, reloaded, {});
    const noopMs = performance.now() - t1;
    const again = await applyToServer(client, noop);
    const after = fingerprintOf(await fetchActualState(client));

    return [
      {
        name: `gitops: plan+apply ${CONTROLS} controls, ${AGENTS} agents into an empty server`,
        value: applyMs / 1000,
        unit: 's',
        goal: '< 5 s',
        pass: applyMs < 5000,
        note: `${first.plan.operations.length} operations, ${applied.writes} writes, ${(applyMs / first.plan.operations.length).toFixed(2)} ms per operation`,
        headline: { measure: `plan + apply, ${CONTROLS.toLocaleString('en-US')} controls and ${AGENTS} agents`, workload: 'into an empty server, SQLite' },
      },
      {
        name: 'gitops: no-op plan afterwards (load + fetch + plan)',
        value: noopMs / 1000,
        unit: 's',
        goal: '< 1 s',
        pass: noopMs < 1000,
        note: `${(noopMs / readMs).toFixed(2)}x one bare state read (${readMs.toFixed(0)} ms)`,
      },
      {
        name: 'gitops: writes made by the no-op plan and its apply',
        value: noop.plan.operations.length + again.writes,
        unit: 'writes',
        goal: '0',
        pass: noop.plan.operations.length + again.writes === 0 && before === after,
        note: before === after ? 'server fingerprint unchanged' : 'server fingerprint CHANGED',
      },
    ];
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const benchmarks: Benchmark[] = [{ name: 'gitops', run }];

export const section: BenchSection = {
  name: 'GitOps plan and apply',
  chapter: 'GitOps, reload, testing',
  method: `A generated directory of 1,000 controls and 100 agents (10 links each) planned and applied
into an empty in-process server (SQLite \`:memory:\`), then the no-op plan and the writes it
makes. Baseline: one full read of the server state in the same run (what every plan must
do).`,
  benchmarks,
};
