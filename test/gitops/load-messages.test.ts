// Messages that must not mislead: one diagnostic for a typo, no cross-file noise from a
// file that failed to parse.
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments, type SourceFile } from '../../src/gitops/load.js';
import { compileControls, evaluateStep } from '../../src/engine/index.js';

const load = (files: SourceFile[]) => loadDocuments(files, { validateControl: controlValidator(createDefaultRegistry()) });
const errors = (files: SourceFile[]) => load(files).diagnostics.filter((d) => d.severity === 'error');

describe('a typo of a required key', () => {
  for (const [typo, where] of [['desicion', 'action'], ['Decision', 'action'], ['decison', 'action']] as const) {
    it(`"${typo}:" reports only the unknown key, with a did-you-mean`, () => {
      const found = errors([{ path: 'c.yaml', text: `kind: Control\nname: c\nselector: { path: input }\nevaluator: { name: regex, config: { pattern: x } }\n${where}:\n  ${typo}: deny\n` }]);
      expect(found.map((d) => [d.code, d.field, d.line])).toEqual([['unknown_field', `${where}.${typo}`, 6]]);
      expect(found[0]!.hint).toMatch(/decision/);
    });
  }

  it('a missing required key without a typo beside it is still reported', () => {
    const found = errors([{ path: 'c.yaml', text: 'kind: Control\nname: c\nselector: { path: input }\nevaluator: { name: regex, config: { pattern: x } }\naction: { metadata: {} }\n' }]);
    expect(found.map((d) => d.field)).toEqual(['action.decision']);
  });
});

describe('a file that does not parse', () => {
  it('adds no cross-file errors about what it would have defined', () => {
    const broken = 'kind: Control\nname: deny-rm\nselector: { path: input }\nevaluator: { name: regex, config: { pattern: x } }\naction:\n  decision: deny\n   metadata: {}\n';
    const agent = 'kind: Agent\nagent_name: bot\ncontrols: [deny-rm]\n';
    const found = errors([{ path: 'a.yaml', text: agent }, { path: 'b.yaml', text: broken }]);
    expect(found.length).toBeGreaterThan(0);
    expect(found.map((d) => [d.code, d.file])).toEqual(found.map(() => ['yaml_syntax', 'b.yaml']));
  });

  it('a link to a control no file defines is still reported when every file parses', () => {
    const found = errors([{ path: 'a.yaml', text: 'kind: Agent\nagent_name: bot\ncontrols: [nowhere]\n' }]);
    expect(found.map((d) => d.code)).toEqual(['dangling_link']);
  });
});

describe('action.message', () => {
  const deny = (extra: string) => `kind: Control\nname: c\ncondition:\n  not: { selector: { path: input.to }, evaluator: { name: list, config: { values: [ops@example.com] } } }\naction:\n  decision: ${extra}\n`;

  it('a deny may carry the message the agent is shown', async () => {
    const loaded = load([{ path: 'c.yaml', text: deny('deny\n  message: Mail may only go to ops@example.com') }]);
    expect(loaded.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const set = compileControls(loaded.controls.map((c, i) => ({ control_id: i + 1, name: c.name, data: c.data })), createDefaultRegistry());
    const { result } = await evaluateStep(set, { type: 'tool', name: 'send', input: { to: 'someone@else.org' } }, 'pre');
    expect(result.decision).toBe('deny');
    expect(result.matches[0]!.result.message).toBe('Mail may only go to ops@example.com');
  });

  it('is refused on other decisions, whose guidance has its own place', () => {
    const found = errors([{ path: 'c.yaml', text: deny('steer\n  steering_context: { message: use ops }\n  message: x') }]);
    expect(found.map((d) => d.field)).toEqual(['action.message']);
  });
});
