/**
 * Hot-reload benchmarks (issue #6), against a listening server (`startServer` with
 * `watchDir`, SQLite file, 127.0.0.1) watching a temp directory:
 * - latency: 50 edits flipping a control between deny and allow, each timed from
 *   `writeFile` to the first POST /api/v1/evaluation that returns the new decision
 *   (polled back to back); the baseline is the in-process apply alone (`reloadNow()`
 *   with no watcher and no debounce), measured in the same run;
 * - consistency: 100 reloads while 8 loops post evaluations without pause. Each reload
 *   swaps the actions of two controls in one file (written atomically), so a response
 *   mixing the old and the new set would show both as deny or both as warn.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';
import { loadConfig } from '../src/server/config.js';
import { startServer, type ServerHandle } from '../src/server/start.js';

const EDITS = 50;
const RELOADS = 100;
const LOOPS = 8;
const TIMEOUT_MS = 10_000;

function control(name: string, decision: string, pattern: string): string {
  return [
    'kind: Control',
    `name: ${name}`,
    'scope: { step_types: [tool], stages: [pre] }',
    'selector: { path: input.query }',
    `evaluator: { name: regex, config: { pattern: '${pattern}' } }`,
    `action: { decision: ${decision} }`,
    '',
  ].join('\n');
}

const AGENT = 'kind: Agent\nagent_name: bench-bot\ncontrols: [flip, pair-a, pair-b]\n';
/** The two versions of the pair: the actions swap, so a mix of versions is visible. */
const PAIR = [
  `${control('pair-a', 'deny', 'pair')}---\n${control('pair-b', 'warn', 'pair')}`,
  `${control('pair-a', 'warn', 'pair')}---\n${control('pair-b', 'deny', 'pair')}`,
];
const VALID_PAIRS = new Set(['pair-a:deny,pair-b:warn', 'pair-a:warn,pair-b:deny']);

interface Evaluation {
  decision: string;
  matches: Array<{ control_name: string; action: string }>;
}

async function evaluate(url: string, query: string): Promise<Evaluation> {
  const res = await fetch(`${url}/api/v1/evaluation`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ agent_name: 'bench-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query } } }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
  return (await res.json()) as Evaluation;
}

async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = performance.now() + TIMEOUT_MS;
  while (performance.now() < deadline) {
    const value = await fn();
    if (value !== undefined) return value;
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function withServer<T>(fn: (server: ServerHandle, dir: string) => Promise<T>): Promise<T> {
  const root = mkdtempSync(join(tmpdir(), 'guardctl-bench-reload-'));
  const dir = join(root, 'controls');
  mkdirSync(dir);
  writeFileSync(join(dir, 'flip.yaml'), control('flip', 'deny', 'flip'));
  writeFileSync(join(dir, 'pair.yaml'), PAIR[0]!);
  writeFileSync(join(dir, 'agents.yaml'), AGENT);
  const config = loadConfig(
    { HOST: '127.0.0.1', PORT: '0', OBSERVABILITY_ENABLED: 'false', DATABASE_URL: join(root, 'guard.db') },
    { watchDir: dir },
  );
  const server = await startServer(config, { logger: false, handleSignals: false, print: () => {} });
  try {
    return await fn(server, dir);
  } finally {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
}

async function latency(): Promise<BenchRow[]> {
  return withServer(async (server, dir) => {
    const file = join(dir, 'flip.yaml');
    const times: number[] = [];
    let decision = 'deny';
    for (let i = 0; i < EDITS; i++) {
      decision = decision === 'deny' ? 'allow' : 'deny';
      const started = performance.now();
      writeFileSync(file, control('flip', decision, 'flip'));
      await until('the new decision', async () => ((await evaluate(server.url, 'flip')).decision === decision ? true : undefined));
      times.push(performance.now() - started);
    }
    // Baseline: the same edit applied in-process, without the watcher and the debounce
    // (the reloader's settling reads, 75 ms apart, included).
    const applies: number[] = [];
    const reloader = server.reloader!;
    for (let i = 0; i < 20; i++) {
      decision = decision === 'deny' ? 'allow' : 'deny';
      // Write atomically so the watcher's own reload (queued behind ours) sees the same file.
      writeFileSync(`${file}.tmp`, control('flip', decision, 'flip'));
      renameSync(`${file}.tmp`, file);
      const started = performance.now();
      await reloader.reloadNow();
      applies.push(performance.now() - started);
    }
    const med = median(times);
    const base = median(applies);
    return [
      {
        name: `reload: file write -> new decision, median of ${EDITS} edits`,
        value: med, unit: 'ms', goal: '< 300 ms', pass: med < 300, note: `${(med / base).toFixed(1)}x the in-process reload (debounce 75 ms before it)`,
        headline: { measure: 'hot reload, file write to new decision', workload: `median of ${EDITS} edits; a listening server, SQLite file` },
      },
      { name: `reload: file write -> new decision, max of ${EDITS} edits`, value: Math.max(...times), unit: 'ms' },
      { name: 'reload: in-process reload alone, settling reads included (baseline), median', value: base, unit: 'ms' },
    ];
  });
}

async function consistency(): Promise<BenchRow[]> {
  return withServer(async (server, dir) => {
    const reloader = server.reloader!;
    let stop = false;
    let requests = 0;
    let failed = 0;
    let inconsistent = 0;
    const seen = new Set<string>();
    const loop = async () => {
      while (!stop) {
        try {
          const result = await evaluate(server.url, 'pair');
          requests++;
          const pair = result.matches
            .map((m) => `${m.control_name}:${m.action}`)
            .sort()
            .join(',');
          seen.add(pair);
          if (!VALID_PAIRS.has(pair) || result.decision !== 'deny') inconsistent++;
        } catch {
          failed++;
        }
      }
    };
    const loops = Array.from({ length: LOOPS }, loop);
    const started = performance.now();
    const file = join(dir, 'pair.yaml');
    const before = reloader.status().reloads;
    for (let i = 1; i <= RELOADS; i++) {
      const target = before.success + i;
      writeFileSync(`${file}.tmp`, PAIR[i % 2]!);
      renameSync(`${file}.tmp`, file);
      await until('the reload', async () => {
        await new Promise((r) => setTimeout(r, 2));
        return reloader.status().reloads.success >= target ? true : undefined;
      });
    }
    const seconds = (performance.now() - started) / 1000;
    stop = true;
    await Promise.all(loops);
    const failures = reloader.status().reloads.failure - before.failure;
    return [
      { name: `reload: failed requests during ${RELOADS} reloads under load`, value: failed, unit: 'requests', goal: '= 0', pass: failed === 0, note: `${requests} evaluations in ${seconds.toFixed(1)} s from ${LOOPS} loops` },
      { name: `reload: responses mixing old and new sets during ${RELOADS} reloads`, value: inconsistent, unit: 'responses', goal: '= 0', pass: inconsistent === 0, note: `both versions seen: ${seen.size === 2}; reload failures: ${failures}` },
    ];
  });
}

const benchmarks: Benchmark[] = [
  { name: 'reload-latency', run: latency },
  { name: 'reload-consistency', run: consistency },
];

export const section: BenchSection = {
  name: 'Hot reload',
  chapter: 'GitOps, reload, testing',
  method: `A listening server watching a temporary directory (SQLite file, 127.0.0.1).

- **Latency**: 50 edits flipping a control between deny and allow, each timed from the file
  write to the first \`POST /api/v1/evaluation\` that returns the new decision (polled back
  to back). Baseline: the in-process reload alone (no watcher, no debounce) in the same
  run. Removals are not in these figures: they wait a further second of confirmation by
  design.
- **Consistency**: 100 reloads while 8 loops post evaluations without pause. Each reload
  swaps the actions of two controls in one file (written atomically), so a response mixing
  the old and the new set would show both as deny or both as warn.`,
  benchmarks,
};
