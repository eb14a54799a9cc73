import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { documentJsonSchema, documentJsonSchemaText } from '../../src/gitops/json-schema.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { createAiVendorScorer } from '../../src/evaluators/ai-vendor-scorer/index.js';
import { validateControlDocument } from '../../src/engine/validate-control.js';

const repo = join(import.meta.dirname, '../..');

describe('the JSON Schema of the YAML documents', () => {
  it('matches the checked-in schema/guardctl.schema.json', () => {
    const checkedIn = readFileSync(join(repo, 'schema/guardctl.schema.json'), 'utf8');
    expect(checkedIn, 'schema/guardctl.schema.json drifted: run "npm run schema" (or guardctl schema > schema/guardctl.schema.json)').toBe(
      documentJsonSchemaText(),
    );
  });

  it('offers exactly the five kinds, forbids unknown keys and leaves defaulted fields optional', () => {
    const schema = documentJsonSchema() as { oneOf: Array<{ properties: Record<string, { const?: string }>; required: string[]; additionalProperties: boolean }> };
    expect(schema.oneOf.map((b) => b.properties.kind?.const)).toEqual(['Control', 'Agent', 'Policy', 'McpServer', 'Test']);
    const control = schema.oneOf[0]!;
    expect(control.additionalProperties).toBe(false);
    expect(control.required).toEqual(expect.arrayContaining(['kind', 'name', 'action']));
    expect(control.required).not.toContain('enabled');
  });
});

// A control that validates; each bad case below changes one thing.
const base = {
  kind: 'Control',
  name: 'c',
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: 'x' } },
  action: { decision: 'deny' },
};
const leaf = { selector: { path: 'input' }, evaluator: { name: 'list', config: { values: ['a'] } } };

/** Documents `guardctl validate` refuses; the schema must refuse each of them too. */
const BAD: Array<[string, Record<string, unknown>]> = [
  ['a selector without an evaluator', { ...base, evaluator: undefined }],
  ['an evaluator without a selector', { ...base, selector: undefined }],
  ['neither selector+evaluator nor condition', { ...base, selector: undefined, evaluator: undefined }],
  ['selector and condition together', { ...base, evaluator: undefined, condition: leaf }],
  ['evaluator and condition together', { ...base, selector: undefined, condition: leaf }],
  ['a config typo (patern)', { ...base, evaluator: { name: 'regex', config: { patern: 'x' } } }],
  ['a regex without its pattern', { ...base, evaluator: { name: 'regex' } }],
  ['an empty pattern', { ...base, evaluator: { name: 'regex', config: { pattern: '' } } }],
  ['an unknown evaluator', { ...base, evaluator: { name: 'regexp', config: { pattern: 'x' } } }],
  ['on_error that is not allow or deny', { ...base, evaluator: { name: 'regex', config: { pattern: 'x', on_error: 'ignore' } } }],
  ['a list with an unknown match mode', { ...base, evaluator: { name: 'list', config: { values: ['a'], match_mode: 'regex' } } }],
  ['a list without values', { ...base, evaluator: { name: 'list', config: { values: [] } } }],
  ['a vendor scorer with an unknown operator', { ...base, evaluator: { name: 'ai_vendor.scorer', config: { metric: 'm', operator: 'ge', target_value: 1 } } }],
  ['steer without steering_context', { ...base, action: { decision: 'steer' } }],
  ['a typo inside a condition leaf', { ...base, selector: undefined, evaluator: undefined, condition: { and: [{ ...leaf, evaluator: { name: 'list', config: { value: ['a'] } } }] } }],
  ['an unknown evaluator inside a condition', { ...base, selector: undefined, evaluator: undefined, condition: { not: { ...leaf, evaluator: { name: 'nope' } } } }],
];

/** Shapes the schema must keep accepting. */
const GOOD: Array<[string, Record<string, unknown>]> = [
  ['the base control', base],
  ['on_error deny', { ...base, evaluator: { name: 'regex', config: { pattern: 'x', on_error: 'deny' } } }],
  ['a condition tree', { ...base, selector: undefined, evaluator: undefined, condition: { or: [leaf, { not: leaf }] } }],
  ['steer with steering_context', { ...base, action: { decision: 'steer', steering_context: { message: 'ask first' } } }],
  ['a vendor scorer', { ...base, evaluator: { name: 'ai_vendor.scorer', config: { metric: 'toxicity', operator: 'gt', target_value: 0.8 } } }],
];

/** JSON drops undefined keys, as a YAML file would not have them. */
const plain = (doc: Record<string, unknown>) => JSON.parse(JSON.stringify(doc)) as Record<string, unknown>;

describe('the schema flags what validate flags', () => {
  const check = new Ajv2020({ allErrors: true, strict: false }).compile(documentJsonSchema());
  // The server a user validates against: here with the optional vendor scorer enabled.
  const registry = createDefaultRegistry({ extra: [createAiVendorScorer({ apiKey: 'k', url: 'https://scorer.example/v1' })] });

  it.each(BAD)('refuses %s, as validate does', (_name, doc) => {
    expect(validateControlDocument(plain(doc), registry).ok).toBe(false);
    expect(check(plain(doc))).toBe(false);
  });

  it.each(GOOD)('accepts %s, as validate does', (_name, doc) => {
    expect(validateControlDocument(plain(doc), registry)).toMatchObject({ ok: true });
    expect(check(plain(doc)), JSON.stringify(check.errors)).toBe(true);
  });

  const files = [
    ...readdirSync(join(repo, 'controls')).filter((f) => f.endsWith('.yaml')).map((f) => join('controls', f)),
    ...readdirSync(join(repo, 'controls/tests')).filter((f) => f.endsWith('.yaml')).map((f) => join('controls/tests', f)),
  ];
  it.each(files)('accepts every document of %s', (file) => {
    const docs = parseAllDocuments(readFileSync(join(repo, file), 'utf8'));
    expect(docs.length).toBeGreaterThan(0);
    for (const doc of docs) {
      const value = doc.toJS() as unknown;
      expect(check(value), `${file}: ${JSON.stringify(check.errors)}`).toBe(true);
    }
  });
});
