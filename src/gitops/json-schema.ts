/**
 * The JSON Schema of one YAML document (Control | Agent | Test), generated from the model's
 * zod schemas so editors complete and check exactly what the loader accepts.
 */
import { z } from 'zod';
import { AgentDocumentSchema, ControlDocumentSchema } from '../model/index.js';
import { TestDocumentSchema } from '../model/test-case.js';

/** Where the published package serves the schema (package.json `files` includes schema/). */
export const SCHEMA_ID = 'https://unpkg.com/guardctl/schema/guardctl.schema.json';

export function documentJsonSchema(): Record<string, unknown> {
  const union = z.union([ControlDocumentSchema, AgentDocumentSchema, TestDocumentSchema]);
  // io 'input': defaults make fields optional in the file, which is what a person writes.
  const schema = z.toJSONSchema(union, { io: 'input', target: 'draft-2020-12', unrepresentable: 'any' }) as Record<string, unknown>;
  const { $schema, anyOf, ...rest } = schema;
  const out = {
    $schema,
    $id: SCHEMA_ID,
    title: 'guardctl control directory document',
    description: 'One YAML document of a guardctl controls directory: kind Control, Agent or Test.',
    ...rest,
    // The kinds are disjoint (kind is a literal), so exactly one branch can match.
    oneOf: anyOf,
  };
  // zod names the one recursive definition `__schema0`; editors show that name, so say what it is.
  return JSON.parse(JSON.stringify(out).replaceAll('__schema0', 'Condition')) as Record<string, unknown>;
}

/** The checked-in text of schema/guardctl.schema.json (stable: 2-space JSON and a newline). */
export function documentJsonSchemaText(): string {
  return `${JSON.stringify(documentJsonSchema(), null, 2)}\n`;
}
