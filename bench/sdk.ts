/**
 * The cost of the SDK around a call: an async function wrapped with `control()` and 20
 * `execution: sdk` controls in scope (checked pre and post, in-process, no network),
 * next to the same function called bare, both measured in this run.
 */
import type { ControlRecord } from '../src/model/index.js';
import { GuardAgent } from '../src/sdk/index.js';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';

const CONTROLS = 20;

function records(): ControlRecord[] {
  const out: ControlRecord[] = [];
  for (let i = 1; i <= CONTROLS; i++) {
    const regex = i % 2 === 0;
    out.push({
      control_id: i,
      name: `bench-${i}`,
      enabled: true,
      data: {
        enabled: true,
        execution: 'sdk',
        // Half the controls check the input before the call, half the output after it.
        scope: { step_types: ['tool'], step_names: ['run_sql'], stages: [i <= CONTROLS / 2 ? 'pre' : 'post'] },
        selector: { path: i <= CONTROLS / 2 ? 'input.query' : 'output' },
        evaluator: regex
          ? { name: 'regex', config: { pattern: `(?i)\\b(drop|truncate|grant${i})\\s+table\\b` } }
          : { name: 'list', config: { values: [`forbidden-${i}`, 'rm -rf', 'shutdown'], match_mode: 'contains' } },
        action: { decision: i % 3 === 0 ? 'steer' : 'deny', ...(i % 3 === 0 && { steering_context: { message: 'fix it' } }) },
      },
      managed_by: null,
      source: null,
      created_at: '2026-01-01T00:00:00Z',
      updated_at: '2026-01-01T00:00:00Z',
    });
  }
  return out;
}

/** Microseconds per awaited call of `fn`, median of `rounds` timed rounds. */
async function microsPerCall(fn: () => Promise<unknown>, calls: number, rounds: number): Promise<number> {
  const samples: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) await fn();
    samples.push(((performance.now() - start) * 1000) / calls);
  }
  return median(samples);
}

const benchmarks: Benchmark[] = [
  {
    name: 'sdk wrapped call',
    async run(): Promise<BenchRow[]> {
      const quiet = { info: () => undefined, warn: () => undefined };
      // Events off: the measure is the check itself, not batching (which is amortised I/O).
      const agent = new GuardAgent(
        { agentName: 'bench-bot', serverUrl: 'http://127.0.0.1:9', events: false, refreshIntervalSeconds: 0, logger: quiet },
        records(),
      );
      const args = { query: 'select id, name from customers where region = $1 order by name limit 50' };
      const runSql = async (a: { query: string }): Promise<string> => `rows for ${a.query.length}`;
      const wrapped = agent.control(runSql, { stepName: 'run_sql', type: 'tool' });
      const bare = () => runSql(args);
      const guarded = () => wrapped(args);

      // Warm up both paths so the JIT has settled before timing.
      await microsPerCall(bare, 20_000, 1);
      await microsPerCall(guarded, 20_000, 1);
      const bareUs = await microsPerCall(bare, 50_000, 5);
      const wrappedUs = await microsPerCall(guarded, 20_000, 5);
      await agent.shutdown();
      const overhead = wrappedUs - bareUs;
      return [
        { name: 'unwrapped async call', value: bareUs, unit: 'µs/call' },
        { name: `wrapped call, ${CONTROLS} sdk controls (pre+post)`, value: wrappedUs, unit: 'µs/call' },
        {
          name: 'sdk overhead per call',
          value: overhead,
          unit: 'µs',
          note: `${(wrappedUs / bareUs).toFixed(1)}x the bare call; 10 controls checked pre, 10 post`,
        },
      ];
    },
  },
];

export const section: BenchSection = {
  name: 'SDK',
  chapter: 'CLI, dashboard, SDK and gateway',
  method: `An async function wrapped with \`control()\` and 20 \`execution: sdk\` controls in scope (10
regex and list checks before the call, 10 after; in-process, no network, events off), next
to the same function called bare (the baseline), both in the same run.`,
  benchmarks,
};
