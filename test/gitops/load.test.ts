import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments, type SourceFile } from '../../src/gitops/load.js';
import { decodeText } from '../../src/gitops/read-dir.js';

const load = (files: SourceFile[]) => loadDocuments(files, { validateControl: controlValidator(createDefaultRegistry()) });

const control = (name: string, extra = '') => `kind: Control
name: ${name}
selector: { path: input }
evaluator: { name: regex, config: { pattern: x } }
action: { decision: deny }
${extra}`;

describe('loadDocuments', () => {
  it('reads several documents per file and fills defaults the way the server stores them', () => {
    const result = load([
      { path: 'a.yaml', text: `${control('one')}---\n${control('two')}---\nkind: Agent\nagent_name: '  Bot '\ncontrols: [one, two]\n` },
    ]);
    expect(result.diagnostics).toEqual([]);
    expect(result.controls.map((c) => c.name)).toEqual(['one', 'two']);
    expect(result.controls[0]!.data).toMatchObject({ enabled: true, execution: 'server', scope: {}, action: { decision: 'deny' } });
    expect(result.controls[1]!.source).toEqual({ file: 'a.yaml', line: 7, column: 1 });
    expect(result.agents[0]!.agent_name).toBe('bot');
    expect(result.agents[0]!.controls).toEqual(['one', 'two']);
  });

  it('keeps kind: Test documents raw with their position', () => {
    const result = load([{ path: 't.yaml', text: `${control('one')}---\nkind: Test\nname: t\nagent: bot\ncases: []\n` }]);
    expect(result.tests).toHaveLength(1);
    expect(result.tests[0]!.source).toEqual({ file: 't.yaml', line: 7, column: 1 });
    expect(result.tests[0]!.value).toMatchObject({ kind: 'Test', name: 't' });
  });

  it('ignores an empty document after a trailing separator but not an empty file', () => {
    expect(load([{ path: 'a.yaml', text: `${control('one')}---\n` }]).diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(load([{ path: 'b.yaml', text: '# only a comment\n' }]).diagnostics.map((d) => d.code)).toEqual(['empty_file']);
  });

  it('points at the value of a deep field inside a condition tree', () => {
    const text = `kind: Control
name: deep
condition:
  and:
    - selector: { path: input }
      evaluator: { name: regex, config: { pattern: ok } }
    - not:
        selector: { path: input }
        evaluator:
          name: regex
          config:
            pattern: '(?<name>x)(\\1)'
action: { decision: deny }
`;
    const [d] = load([{ path: 'c.yaml', text }]).diagnostics.filter((x) => x.severity === 'error');
    expect(d).toMatchObject({ code: 'invalid_pattern', field: 'condition.and[1].not.evaluator.config.pattern', line: 12, column: 22 });
  });

  it('reports a duplicate key inside one mapping as a YAML error', () => {
    const [d] = load([{ path: 'd.yaml', text: 'kind: Control\nname: a\nname: b\n' }]).diagnostics;
    expect(d).toMatchObject({ code: 'yaml_syntax', line: 3 });
  });

  it('names the link and suggests the closest control for a dangling link', () => {
    const result = load([{ path: 'e.yaml', text: `${control('block-sql')}---\nkind: Agent\nagent_name: bot\ncontrols: [blok-sql]\n` }]);
    const d = result.diagnostics.find((x) => x.code === 'dangling_link')!;
    expect(d.hint).toContain('"block-sql"');
    expect(d).toMatchObject({ line: 9, column: 12, field: 'controls[0]' });
  });

  it('never throws on hostile input', () => {
    const bomb = `a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\nkind: Control\n`;
    const result = load([{ path: 'f.yaml', text: bomb }, { path: 'g.yaml', text: '\t\t: : :\n' }, { path: 'h.yaml', text: '42\n' }]);
    expect(result.diagnostics.length).toBeGreaterThanOrEqual(3);
    expect(result.controls).toEqual([]);
  });
});

describe('decodeText', () => {
  it('accepts UTF-8 (dropping a byte-order mark) and refuses NUL bytes and invalid UTF-8', () => {
    expect(decodeText(Buffer.from('\uFEFFkind: Control', 'utf8'))).toBe('kind: Control');
    expect(decodeText(Buffer.from([0x6b, 0x00, 0x6b]))).toBeNull();
    expect(decodeText(Buffer.from([0x6b, 0xff, 0xfe]))).toBeNull();
  });
});

describe('text no store can keep', () => {
  it('refuses NUL and lone surrogate escapes with the field and its line, as the server would', () => {
    const result = load([
      { path: 'a.yaml', text: `${control('one', 'description: "bad\\0text"\n')}---\nkind: Agent\nagent_name: bot\nagent_description: "x\\ud800"\n` },
    ]);
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    expect(errors.map((d) => [d.file, d.line, d.field])).toEqual([
      ['a.yaml', 6, 'description'],
      ['a.yaml', 10, 'agent_description'],
    ]);
    expect(errors[0]!.message).toContain('NUL');
    expect(result.controls).toEqual([]);
    expect(result.agents).toEqual([]);
  });

  it('accepts agent names up to the limit the server routes, and names the field above it', () => {
    const ok = load([{ path: 'a.yaml', text: `kind: Agent\nagent_name: ${'a'.repeat(128)}\n` }]);
    expect(ok.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const long = load([{ path: 'a.yaml', text: `kind: Agent\nagent_name: ${'a'.repeat(129)}\n` }]);
    expect(long.diagnostics.map((d) => d.message)).toEqual([expect.stringContaining('at most 128 characters')]);
  });
});

describe('policies that guard nothing are warned about at their position', () => {
  const agent = 'kind: Agent\nagent_name: pay\nlabels: { pci: "true" }\ncontrols: []\n';
  const policy = (controls: string) => `kind: Policy\nname: pci\ncontrols: ${controls}\nagents: { match_labels: { pci: "true" } }\n`;

  it('every bound control disabled: binds_only_disabled at the controls list, a warning, not an error', () => {
    const result = load([{ path: 'p.yaml', text: `${control('off', 'enabled: false\n')}---\n${agent}---\n${policy('[off]')}` }]);
    const found = result.diagnostics.filter((d) => d.code === 'binds_only_disabled');
    expect(found).toEqual([
      expect.objectContaining({
        severity: 'warning',
        message: 'policy "pci" binds only disabled controls: it guards nothing until one of them is enabled',
        file: 'p.yaml',
        line: 15,
        field: 'controls',
      }),
    ]);
  });

  it('one enabled control among them, or a control no file defines (an error of its own), gives no such warning', () => {
    const mixed = load([{ path: 'p.yaml', text: `${control('off', 'enabled: false\n')}---\n${control('on')}---\n${agent}---\n${policy('[off, on]')}` }]);
    expect(mixed.diagnostics.map((d) => d.code)).not.toContain('binds_only_disabled');
    const unknown = load([{ path: 'p.yaml', text: `${agent}---\n${policy('[missing]')}` }]);
    expect(unknown.diagnostics.map((d) => d.code)).toEqual(['unknown_control']);
  });
});

