import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { CompileCache, compileControls, evaluateStep, type CompiledControl, type ControlInput } from '../../src/engine/index.js';
import { controlKey, WeakParts } from '../../src/engine/compile-cache.js';
import type { CompiledLeaf } from '../../src/engine/build-control.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';
import { ControlDataSchema, type ControlDataInput } from '../../src/model/index.js';
import { toolStep } from './helpers.js';

const registry = createDefaultRegistry();

function input(control_id: number, name: string, data: ControlDataInput): ControlInput {
  return { control_id, name, data: ControlDataSchema.parse(data) };
}

function sql(pattern: string, extra: Partial<ControlDataInput> = {}): ControlDataInput {
  return {
    scope: { step_names: ['run_sql', 'query'], stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern } },
    action: { decision: 'deny' },
    ...extra,
  };
}

const leafOf = (c: CompiledControl | undefined) => c?.node as CompiledLeaf;

describe('CompileCache', () => {
  it('gives sets compiled through it one instance of a control they both hold', () => {
    const cache = new CompileCache();
    const shared = input(1, 'no-drop', sql('(?i)drop\\s+table'));
    const a = compileControls([shared, input(2, 'only-a', sql('truncate'))], registry, { cache });
    const b = compileControls([input(3, 'only-b', sql('delete')), { ...shared, data: ControlDataSchema.parse(sql('(?i)drop\\s+table')) }], registry, { cache });
    expect(b.controls[1]).toBe(a.controls[0]);
    expect(b.controls[0]).not.toBe(a.controls[1]);

    // Without a cache, every set compiles its own.
    const c = compileControls([shared], registry);
    expect(c.controls[0]).not.toBe(a.controls[0]);
  });

  it('compiles a control again when its data, name or id change', async () => {
    const cache = new CompileCache();
    const before = compileControls([input(1, 'no-drop', sql('(?i)drop'))], registry, { cache }).controls[0];
    const edited = compileControls([input(1, 'no-drop', sql('(?i)truncate'))], registry, { cache });
    const renamed = compileControls([input(1, 'renamed', sql('(?i)drop'))], registry, { cache }).controls[0];
    const other = compileControls([input(2, 'no-drop', sql('(?i)drop'))], registry, { cache }).controls[0];
    expect(edited.controls[0]).not.toBe(before);
    expect(renamed).not.toBe(before);
    expect(renamed?.name).toBe('renamed');
    expect(other).not.toBe(before);
    expect(other?.control_id).toBe(2);

    const { result } = await evaluateStep(edited, toolStep('run_sql', { query: 'TRUNCATE t' }), 'pre');
    expect(result.decision).toBe('deny');
    const { result: old } = await evaluateStep(edited, toolStep('run_sql', { query: 'DROP t' }), 'pre');
    expect(old.decision).toBe('allow');
  });

  it('shares what different controls repeat: step-name sets, selectors, regex checks', () => {
    const cache = new CompileCache();
    const set = compileControls(
      [
        input(1, 'a', sql('(?i)drop')),
        input(2, 'b', sql('(?i)drop', { action: { decision: 'log' }, scope: { step_names: ['query', 'run_sql'] } })),
        input(3, 'c', sql('(?i)truncate', { scope: { step_names: ['other'], step_name_regex: '^sql_' } })),
        input(4, 'd', sql('(?i)truncate', { scope: { step_name_regex: '^sql_' } })),
      ],
      registry,
      { cache },
    );
    const [a, b, c, d] = set.controls;
    expect(b?.stepNames).toBe(a?.stepNames); // the same names in another order
    expect(c?.stepNames).not.toBe(a?.stepNames);
    expect(leafOf(b).selector).toBe(leafOf(a).selector);
    expect(leafOf(b).check).toBe(leafOf(a).check);
    expect(leafOf(c).check).not.toBe(leafOf(a).check);
    expect(d?.nameRegex).toBe(c?.nameRegex);
  });

  it('evaluates exactly as sets compiled without it', async () => {
    const controls = [
      input(1, 'a', sql('(?i)drop\\s+table')),
      input(2, 'b', sql('(?i)drop\\s+table', { action: { decision: 'log' } })),
      input(3, 'c', {
        scope: { step_name_regex: '^sql_' },
        selector: { path: 'input.query' },
        evaluator: { name: 'list', config: { values: ['rm -rf', 'shutdown'], match_mode: 'contains' } },
        action: { decision: 'steer', steering_context: { message: 'no' } },
      }),
    ];
    const cache = new CompileCache();
    const plain = compileControls(controls, registry);
    // Compiled twice through the cache: the second set is made of shared parts only.
    compileControls(controls, registry, { cache });
    const cached = compileControls(controls, registry, { cache });
    for (const [name, query] of [
      ['run_sql', 'DROP TABLE users'],
      ['run_sql', 'select 1'],
      ['sql_exec', 'sudo shutdown now'],
      ['sql_exec', 'drop table x'],
      ['other', 'drop table x'],
    ] as const) {
      const step = toolStep(name, { query });
      expect((await evaluateStep(cached, step, 'pre')).result, `${name}: ${query}`).toEqual((await evaluateStep(plain, step, 'pre')).result);
    }
  });

  it('does not keep a control that fails to compile: it is tried again each time', () => {
    const cache = new CompileCache();
    // Data that bypassed validation (as after an evaluator change): the pattern is invalid.
    const broken: ControlInput = { control_id: 2, name: 'broken', data: ControlDataSchema.parse(sql('x')) };
    broken.data!.evaluator = { name: 'regex', config: { pattern: 'a(' } };
    const set = compileControls([input(1, 'ok', sql('(?i)ok')), broken], registry, { cache });
    expect(set.skipped.map((s) => s.name)).toEqual(['broken']);
    expect(cache.controls.live).toBe(1);
    const again = compileControls([broken], registry, { cache });
    expect(again.skipped).toEqual(set.skipped);
    expect(cache.controls.live).toBe(1);
  });
});

describe('controlKey', () => {
  it('tells versions of a control apart by content, not by when they were written', () => {
    const base = input(1, 'x', sql('drop'));
    expect(controlKey(input(1, 'x', sql('drop')))).toBe(controlKey(base));
    for (const changed of [input(2, 'x', sql('drop')), input(1, 'y', sql('drop')), input(1, 'x', sql('drop', { enabled: false })), input(1, 'x', sql('dr0p'))]) {
      expect(controlKey(changed)).not.toBe(controlKey(base));
    }
  });
});

describe('WeakParts', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  // A WeakRef keeps its target until the current job ends.
  const collect = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  };

  it('holds a part only while something else does', async () => {
    const parts = new WeakParts<{ n: number }>();
    const held = parts.keep('held', { n: 1 });
    parts.keep('dropped', { n: 2 });
    await collect();
    expect(parts.find('dropped')).toBeUndefined();
    expect(parts.find('held')).toBe(held);
    expect(parts.live).toBe(1);
  });

  it('does not grow with parts that came and went', async () => {
    const parts = new WeakParts<{ n: number }>();
    for (let round = 0; round < 8; round++) {
      for (let n = 0; n < 300; n++) parts.keep(`${round}-${n}`, { n });
      await collect();
    }
    // 2,400 parts were kept over time; the entries of dead ones were swept.
    expect(parts.size).toBeLessThan(600);
  });
});
