// The hints that say exactly what to do: the nearest allowed key, evaluator or kind, else
// the list of allowed ones; and every problem of a document reported at once.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ControlDocumentSchema } from '../../src/model/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDirectory } from '../../src/gitops/directory.js';
import { closestName, hintFor } from '../../src/gitops/hints.js';
import { loadDocuments } from '../../src/gitops/load.js';
import { allowedKeysAt } from '../../src/gitops/schema-keys.js';

const fixtures = join(import.meta.dirname, '../fixtures/invalid');
const load = (text: string) => loadDocuments([{ path: 'c.yaml', text }], { validateControl: controlValidator(createDefaultRegistry()) });

async function hintsOf(name: string): Promise<Record<string, string>> {
  const loaded = await loadDirectory(join(fixtures, name), createDefaultRegistry());
  return Object.fromEntries(loaded.diagnostics.map((d) => [d.field || d.code, d.hint]));
}

describe('allowedKeysAt', () => {
  it('reads the keys of the object at a path from the zod schema, through defaults, lazies and unions', () => {
    expect(allowedKeysAt(ControlDocumentSchema, ['scope'])).toEqual(['step_types', 'step_names', 'step_name_regex', 'stages', 'session_labels', 'session_labels_absent']);
    expect(allowedKeysAt(ControlDocumentSchema, [])).toContain('evaluator');
    expect(allowedKeysAt(ControlDocumentSchema, ['condition', 'and', 0])).toEqual(['selector', 'evaluator', 'and', 'or', 'not']);
    expect(allowedKeysAt(ControlDocumentSchema, ['condition', 'not', 'evaluator'])).toEqual(['name', 'config', 'metadata']);
    expect(allowedKeysAt(ControlDocumentSchema, ['nothing', 'here'])).toEqual([]);
  });
});

describe('closestName', () => {
  it('guesses a near name case-insensitively and nothing when none is near', () => {
    expect(closestName('stagez', ['step_types', 'stages'])).toBe('stages');
    expect(closestName('REGX', ['regex', 'list'])).toBe('regex');
    expect(closestName('toxicity', ['regex', 'list'])).toBeNull();
  });
});

describe('hints', () => {
  it('says "did you mean" for a misspelled key in a Control and an Agent, and a lowercase kind', async () => {
    const hints = await hintsOf('misspelled-key');
    expect(hints['scope.stagez']).toMatch(/^did you mean "stages"\?/);
    expect(hints.controlz).toMatch(/^did you mean "controls"\?/);
    expect(hints.kind).toMatch(/^did you mean "Control"\?/);
  });

  it('lists the allowed keys when no key is near', async () => {
    const hints = await hintsOf('all-problems-at-once');
    expect(hints['scope.colour']).toBe('remove "colour"; the keys allowed here are step_types, step_names, step_name_regex, stages, session_labels, session_labels_absent');
  });

  it('names the nearest evaluator from the registry, else lists them', async () => {
    expect((await hintsOf('all-problems-at-once'))['condition.or[0].evaluator.name']).toMatch(/^did you mean "regex"\?/);
    expect((await hintsOf('unknown-evaluator'))['evaluator.name']).toMatch(/^use one of the evaluators this build knows: regex, list/);
  });

  it('keeps the generic hints when the caller has no names to offer', () => {
    expect(hintFor('unknown_field', 'scope.stagez')).toContain('guardctl schema');
    expect(hintFor('unknown_evaluator', 'evaluator.name', 'unknown evaluator "x"')).toContain('GET /api/v1/evaluators');
    expect(hintFor('unknown_kind', 'kind', '', { given: 'Policy' })).toBe('set "kind:" to Control, Agent or Test');
  });
});

describe('all problems at once', () => {
  it('reports bad patterns and unknown evaluators next to an unrelated schema error, once each', () => {
    const result = load(`kind: Control
name: x
scope: { stagez: [pre], step_name_regex: '(' }
selector: { path: input }
evaluator: { name: regex, config: { pattern: 'a(?=b)' } }
action: { decision: deny }
`);
    expect(result.diagnostics.filter((d) => d.severity === 'error').map((d) => [d.field, d.code])).toEqual([
      ['scope.stagez', 'unknown_field'],
      ['scope.step_name_regex', 'invalid_pattern'],
      ['evaluator.config.pattern', 'invalid_pattern'],
    ]);
  });

  it('leaves an evaluator that is itself malformed to its schema issue', () => {
    const result = load(`kind: Control
name: x
scope: { stagez: [pre] }
selector: { path: input }
evaluator: { name: regex, config: { pattern: 'a(' }, extra: 1 }
action: { decision: deny }
`);
    expect(result.diagnostics.filter((d) => d.severity === 'error').map((d) => [d.field, d.code])).toEqual([
      ['scope.stagez', 'unknown_field'],
      ['evaluator.extra', 'unknown_field'],
    ]);
  });
});
