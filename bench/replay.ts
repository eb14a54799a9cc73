/**
 * Replay and decision tests at size:
 * - replay of 100,000 recorded steps (JSON lines, parsed) against 100 controls on each side
 *   (goal: under 5 s), with the bare cost of the same 200,000 evaluations as the baseline;
 * - a `guardctl test` run of 1,000 cases (load the YAML, check, evaluate), against the bare
 *   cost of 1,000 evaluations.
 */
import { compileControls, evaluateStep } from '../src/engine/index.js';
import { createDefaultRegistry } from '../src/evaluators/index.js';
import { controlValidator } from '../src/gitops/control-validator.js';
import { loadDocuments } from '../src/gitops/load.js';
import { ControlDataSchema, type ControlData, type Step } from '../src/model/index.js';
import { compileReplaySides, parseJsonLines, replay } from '../src/replay/index.js';
import { compileAgentSets, runTests } from '../src/testing/index.js';
import type { Benchmark, BenchRow, BenchSection } from './harness.js';

const STEP_NAMES = ['run_sql', 'search', 'send_email', 'deploy', 'shell'];
const AGENTS = ['analyst', 'support', 'ops', 'sales'];

function control(i: number, variant: 'before' | 'after'): ControlData {
  const name = STEP_NAMES[i % STEP_NAMES.length]!;
  // The "after" side tightens every 20th control, so some decisions change.
  const pattern = variant === 'after' && i % 20 === 2 ? `(?i)(word${i}|select)` : `(?i)\\bword${i}\\b`;
  return ControlDataSchema.parse({
    scope: { step_types: ['tool'], step_names: [name], stages: ['pre'] },
    selector: { path: i % 3 === 0 ? 'input.query' : 'input' },
    evaluator: i % 4 === 0 ? { name: 'list', config: { values: [`word${i}`, `other${i}`], match_mode: 'contains' } } : { name: 'regex', config: { pattern } },
    action: { decision: i % 10 === 0 ? 'steer' : i % 2 === 0 ? 'deny' : 'log', ...(i % 10 === 0 ? { steering_context: { message: 'fix it' } } : {}) },
  });
}

function controls(variant: 'before' | 'after') {
  return Array.from({ length: 100 }, (_, i) => ({ name: `c${i}`, data: control(i, variant) }));
}

function step(i: number): Step {
  const hit = i % 7 === 0 ? ` word${i % 100}` : '';
  return {
    type: 'tool',
    name: STEP_NAMES[i % STEP_NAMES.length]!,
    input: { query: `select id from t${i % 50} where x = ${i}${hit}`, limit: 10 },
    context: { user: `u${i % 1000}` },
  };
}

async function replayBench(): Promise<BenchRow[]> {
  const registry = createDefaultRegistry();
  const agents = AGENTS.map((agent_name) => ({ agent_name, controls: controls('before').map((c) => c.name) }));
  const before = compileAgentSets(controls('before'), agents, registry);
  const after = compileAgentSets(controls('after'), agents, registry);
  const N = 100_000;
  const text = Array.from({ length: N }, (_, i) => JSON.stringify({ agent_name: AGENTS[i % AGENTS.length], stage: 'pre', step: step(i) })).join('\n');

  // Baseline: the evaluations alone (already-parsed steps, no schema check, no bookkeeping).
  const steps = Array.from({ length: N }, (_, i) => step(i));
  const bareStart = performance.now();
  for (let i = 0; i < N; i++) {
    const agent = AGENTS[i % AGENTS.length]!;
    // Every evaluator here is synchronous: the outcomes are plain values, never promises.
    void evaluateStep(before.get(agent)!, steps[i]!, 'pre', { execution: 'server' });
    void evaluateStep(after.get(agent)!, steps[i]!, 'pre', { execution: 'server' });
  }
  const bare = performance.now() - bareStart;

  const start = performance.now();
  const read = parseJsonLines(text);
  const parsed = performance.now() - start;
  const sides = compileReplaySides({ controls: controls('before'), agents }, { controls: controls('after'), agents }, registry);
  const report = await replay(read.records, sides.before, sides.after, { common: sides.common, sourceSkipped: read.skipped });
  const total = performance.now() - start;
  const changed = report.changes.reduce((n, c) => n + c.count, 0);
  return [
    {
      name: 'replay: 100,000 JSON-lines steps, 100 controls per side (parse + check + evaluate, shared controls once)',
      value: Math.round(total),
      unit: 'ms',
      goal: '< 5000 ms',
      pass: total < 5000,
      note: `${changed} changed; JSON parse ${Math.round(parsed)} ms; ${(total / bare).toFixed(2)}x the bare cost of evaluating both full sides, 200,000 evaluations (${Math.round(bare)} ms)`,
    },
  ];
}

async function testRunBench(): Promise<BenchRow[]> {
  const registry = createDefaultRegistry();
  const cs = controls('before');
  const yamlControls = cs.map((c) => `kind: Control\nname: ${c.name}\n${jsonYaml(c.data)}`).join('\n---\n');
  const agentDoc = `kind: Agent\nagent_name: analyst\ncontrols: [${cs.map((c) => c.name).join(', ')}]`;
  const cases = Array.from({ length: 1000 }, (_, i) => {
    const s = step(i);
    return `  - name: case ${i}\n    stage: pre\n    step: ${JSON.stringify(s)}\n    expect: { decision: allow }`;
  });
  const testDoc = `kind: Test\nname: bulk\nagent: analyst\ncases:\n${cases.join('\n')}\n`;
  const files = [
    { path: 'controls.yaml', text: `${yamlControls}\n---\n${agentDoc}\n` },
    { path: 'bulk.test.yaml', text: testDoc },
  ];

  const set = compileControls(cs.map((c, i) => ({ control_id: i + 1, name: c.name, data: c.data })), registry);
  const bareStart = performance.now();
  for (let i = 0; i < 1000; i++) void evaluateStep(set, step(i), 'pre');
  const bare = performance.now() - bareStart;

  const start = performance.now();
  const loaded = loadDocuments(files, { validateControl: controlValidator(registry) });
  const loadedAt = performance.now();
  const report = await runTests({ directory: 'bench', controls: loaded.controls, agents: loaded.agents, tests: loaded.tests, registry });
  const end = performance.now();
  if (report.summary.total !== 1000) throw new Error(`expected 1000 cases, ran ${report.summary.total}`);
  return [
    {
      name: 'guardctl test: 1,000 cases against 100 controls (load YAML + check + evaluate)',
      value: Math.round(end - start),
      unit: 'ms',
      note: `load ${Math.round(loadedAt - start)} ms, run ${Math.round(end - loadedAt)} ms; bare 1,000 evaluations ${bare.toFixed(1)} ms; ${report.summary.failed} cases fail on purpose`,
    },
  ];
}

/** JSON is YAML: one flow mapping per key keeps the generated documents simple. */
function jsonYaml(data: ControlData): string {
  return Object.entries(data)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join('\n');
}

const benchmarks: Benchmark[] = [
  { name: 'replay', run: replayBench },
  { name: 'replay-tests', run: testRunBench },
];

export const section: BenchSection = {
  name: 'Replay and guardctl test',
  chapter: 'GitOps, reload, testing',
  method: `- **Replay**: 100,000 recorded steps as JSON lines (parsed, checked and evaluated) against
  100 controls on each side, of which 5 differ; 4 agents, 20 controls in scope per step.
  Baseline: the bare cost of evaluating both sides in full (200,000 evaluations of
  already-parsed steps) in the same run.
- **\`guardctl test\`**: 1,000 cases against 100 controls (loading the YAML, checking,
  evaluating), against the bare cost of 1,000 evaluations.`,
  benchmarks,
};
