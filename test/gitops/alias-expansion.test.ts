// YAML aliases may not blow a small file up: the expanded size of a document is bounded and
// the alias that crosses the bound is named at file:line:col, before anything is expanded.
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments, type SourceFile } from '../../src/gitops/load.js';
import { MAX_ALIAS_EXPANSION } from '../../src/gitops/alias-size.js';

const load = (files: SourceFile[]) => loadDocuments(files, { validateControl: controlValidator(createDefaultRegistry()) });

/** A list control whose values are `copies` aliases of one anchored list of `items` values. */
function bomb(items: number, copies: number, style: 'flow' | 'nested' = 'flow'): string {
  const values = Array.from({ length: items }, (_, i) => `v${i}`).join(', ');
  const aliases = style === 'flow' ? `[${Array.from({ length: copies }, () => '*big').join(', ')}]` : Array.from({ length: copies }, () => '\n      - *big').join('');
  return `kind: Control
name: bomb
description: &big [${values}]
selector: { path: input }
evaluator:
  name: list
  config:
    values: ${aliases}
action: { decision: deny }
`;
}

describe('alias expansion', () => {
  it('refuses a document whose aliases expand past the bound, naming the alias that crossed it', () => {
    const text = bomb(50_000, 99);
    expect(text.length).toBeLessThan(600_000);
    const result = load([{ path: 'bomb.yaml', text }]);
    expect(result.controls).toEqual([]);
    const [first] = result.diagnostics;
    expect(result.diagnostics.map((d) => d.code)).toEqual(['alias_expansion']);
    expect(first).toMatchObject({ file: 'bomb.yaml', line: 8 });
    expect(first!.column).toBeGreaterThan(12);
    expect(first!.message).toMatch(new RegExp(`more than ${MAX_ALIAS_EXPANSION.toLocaleString('en-US')}`));
  });

  it('counts nested aliases (aliases of anchors that hold aliases) and block-style lists too', () => {
    const nested = `kind: Control
name: nested
description: x
selector: { path: input }
evaluator:
  name: list
  config:
    values: &l1 [a, b, c, d, e, f, g, h, i, j]
    metadata:
      l2: &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]
      l3: &l3 [*l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2]
      l4: &l4 [*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3]
      l5: &l5 [*l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4]
      l6: [*l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5]
action: { decision: deny }
`;
    expect(load([{ path: 'n.yaml', text: nested }]).diagnostics.map((d) => [d.code, d.line])).toEqual([['alias_expansion', 13]]);
    expect(load([{ path: 'b.yaml', text: bomb(20_000, 30, 'nested') }]).diagnostics.map((d) => d.code)).toEqual(['alias_expansion']);
  });

  it('keeps ordinary aliases working', () => {
    const text = `kind: Control
name: shared
description: x
selector: { path: input }
evaluator: { name: list, config: { values: &v [a, b, c] } }
action: { decision: deny, metadata: { same: *v } }
`;
    const result = load([{ path: 'ok.yaml', text }]);
    expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(result.controls[0]!.data.action.metadata).toEqual({ same: ['a', 'b', 'c'] });
  });
});
