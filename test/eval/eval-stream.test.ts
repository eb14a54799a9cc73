// A large dataset streams: the heap after evaluating it is not the size of the file.
import { createWriteStream, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect, test } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { inProcessEvaluator, readLines, runEval } from '../../src/eval/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function writeDataset(path: string, lines: number): Promise<void> {
  const out = createWriteStream(path);
  const padding = 'lorem ipsum dolor sit amet '.repeat(24);
  for (let i = 0; i < lines; i++) {
    const input = i % 10 === 0 ? `${padding} AKIAQWERTYUIOPASDF${String(i % 100).padStart(2, '0')}` : `${padding} ${i}`;
    const line = `${JSON.stringify({ id: `c${i}`, stage: 'pre', step: { type: 'llm', name: 'chat', input }, expect: { triggers: { s: i % 10 === 0 } } })}\n`;
    if (!out.write(line)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  }
  await new Promise<void>((resolve) => out.end(() => resolve()));
}

test('a 70 MB dataset is evaluated in flat memory', async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'guard-eval-big-')), 'big.jsonl');
  await writeDataset(path, 100_000);
  const size = statSync(path).size;
  expect(size).toBeGreaterThan(70_000_000);
  const evaluator = inProcessEvaluator({
    controls: [{ name: 's', data: { enabled: true, execution: 'server', scope: {}, selector: { path: 'input' }, evaluator: { name: 'secrets', config: {} }, action: { decision: 'deny' } } }],
    agents: [],
    registry: createDefaultRegistry(),
  });
  gc();
  const before = process.memoryUsage().heapUsed;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
  const report = await runEval(readLines(path), evaluator, { dataset: path });
  clearInterval(sampler);
  gc();
  const after = process.memoryUsage().heapUsed;
  expect(report.cases).toBe(100_000);
  expect(report.controls[0]).toMatchObject({ tp: 10_000, tn: 90_000, fp: 0, fn: 0 });
  // Holding the lines would take the file's size (and more, parsed); what is kept is counts.
  expect(after - before).toBeLessThan(8_000_000);
  expect(peak - before).toBeLessThan(size / 2);
}, 120_000);
