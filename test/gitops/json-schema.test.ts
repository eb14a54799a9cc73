import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentJsonSchema, documentJsonSchemaText } from '../../src/gitops/json-schema.js';

describe('the JSON Schema of the YAML documents', () => {
  it('matches the checked-in schema/guardctl.schema.json', () => {
    const checkedIn = readFileSync(join(import.meta.dirname, '../../schema/guardctl.schema.json'), 'utf8');
    expect(checkedIn, 'schema/guardctl.schema.json drifted: run "npm run schema" (or guardctl schema > schema/guardctl.schema.json)').toBe(
      documentJsonSchemaText(),
    );
  });

  it('offers exactly the three kinds, forbids unknown keys and leaves defaulted fields optional', () => {
    const schema = documentJsonSchema() as { oneOf: Array<{ properties: Record<string, { const?: string }>; required: string[]; additionalProperties: boolean }> };
    expect(schema.oneOf.map((b) => b.properties.kind?.const)).toEqual(['Control', 'Agent', 'Test']);
    const control = schema.oneOf[0]!;
    expect(control.additionalProperties).toBe(false);
    expect(control.required).toEqual(expect.arrayContaining(['kind', 'name', 'action']));
    expect(control.required).not.toContain('enabled');
  });
});
