/**
 * The JSON Schema of one YAML document (Control | Agent | Policy | McpServer | Test), generated from the model's
 * zod schemas so editors complete and check what the loader accepts. On top of the model it
 * carries what `validate` knows beyond the shapes, where JSON Schema can say it: each
 * evaluator's own config (by `evaluator.name`, unknown keys refused), the evaluator names
 * a server knows, steer needing steering_context, and selector+evaluator or condition.
 */
import { z } from 'zod';
import { ActionSchema, AgentDocumentSchema, ControlDocumentSchema, EvaluatorSpecSchema, McpServerDocumentSchema, PolicyDocumentSchema } from '../model/index.js';
import { TestDocumentSchema } from '../model/test-case.js';
import type { EvaluatorInfo } from '../evaluators/registry.js';
import { createDefaultRegistry } from '../evaluators/registry.js';
import {
  AI_VENDOR_SCORER_CONFIG_SCHEMA,
  AI_VENDOR_SCORER_DESCRIPTION,
  AI_VENDOR_SCORER_NAME,
} from '../evaluators/ai-vendor-scorer/index.js';

/**
 * The schema's identifier: a name, not an address (no URL serves it under this name).
 * Where to fetch it: schema/guardctl.schema.json in this repository and in the package,
 * or a server's `GET /schema.json`.
 */
export const SCHEMA_ID = 'urn:guardctl:schema:document';

type Json = Record<string, unknown>;

/**
 * The evaluators the checked-in schema knows: the built-ins and the bundled optional
 * `ai_vendor.scorer` (its config is the same whether or not a server enables it).
 */
export function builtInEvaluatorInfos(): EvaluatorInfo[] {
  const infos = createDefaultRegistry().list();
  if (!infos.some((i) => i.name === AI_VENDOR_SCORER_NAME)) {
    infos.push({ name: AI_VENDOR_SCORER_NAME, description: AI_VENDOR_SCORER_DESCRIPTION, config_schema: AI_VENDOR_SCORER_CONFIG_SCHEMA, counts: false });
  }
  return infos;
}

export function documentJsonSchema(evaluators: readonly EvaluatorInfo[] = builtInEvaluatorInfos()): Json {
  const union = z.union([ControlDocumentSchema, AgentDocumentSchema, PolicyDocumentSchema, McpServerDocumentSchema, TestDocumentSchema]);
  // io 'input': defaults make fields optional in the file, which is what a person writes.
  const schema = z.toJSONSchema(union, {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
    override: ({ zodSchema, jsonSchema }) => {
      const target = jsonSchema as Json;
      if (zodSchema === EvaluatorSpecSchema) withEvaluatorConfigs(target, evaluators);
      else if (zodSchema === ActionSchema) withSteerRule(target);
      else if (zodSchema === ControlDocumentSchema) withCheckForm(target);
    },
  }) as Json;
  const { $schema, anyOf, ...rest } = schema;
  const out = {
    $schema,
    $id: SCHEMA_ID,
    title: 'guardctl control directory document',
    description: 'One YAML document of a guardctl controls directory: kind Control, Agent, Policy, McpServer or Test.',
    ...rest,
    // The kinds are disjoint (kind is a literal), so exactly one branch can match.
    oneOf: anyOf,
  };
  // zod names the one recursive definition `__schema0`; editors show that name, so say what it is.
  return JSON.parse(JSON.stringify(out).replaceAll('__schema0', 'Condition')) as Json;
}

/** The checked-in text of schema/guardctl.schema.json (stable: 2-space JSON and a newline). */
export function documentJsonSchemaText(evaluators?: readonly EvaluatorInfo[]): string {
  return `${JSON.stringify(documentJsonSchema(evaluators), null, 2)}\n`;
}

const ON_ERROR = {
  type: 'string',
  enum: ['allow', 'deny'],
  description: 'What an evaluator failure decides for this control: allow (fail open) or deny (fail closed). Default: deny for deny and steer controls, allow for the others',
};

/** An evaluator's config schema as a document holds it: with the shared on_error key. */
function documentConfigSchema(info: EvaluatorInfo): Json {
  const { $schema: _schema, ...config } = info.config_schema as Json;
  const properties = (config.properties ?? {}) as Json;
  return { ...config, type: 'object', properties: { ...properties, on_error: ON_ERROR } };
}

/**
 * `name` is one of the evaluators known, and `config` is checked against that evaluator's
 * schema (an if/then per name). A config with required keys makes `config` required.
 */
function withEvaluatorConfigs(target: Json, evaluators: readonly EvaluatorInfo[]): void {
  const properties = target.properties as Json;
  properties.name = {
    type: 'string',
    enum: evaluators.map((e) => e.name),
    description: 'The evaluator; what `GET /api/v1/evaluators` lists (plugins: run `guardctl schema` with GUARD_EVALUATORS set)',
  };
  target.allOf = evaluators.map((info) => {
    const config = documentConfigSchema(info);
    const needsConfig = Array.isArray(config.required) && config.required.length > 0;
    return {
      if: { properties: { name: { const: info.name } }, required: ['name'] },
      then: {
        properties: { config: { description: info.description, ...config } },
        ...(needsConfig ? { required: ['config'] } : {}),
      },
    };
  });
}

/** A steer action needs steering_context (ActionSchema's refinement). */
function withSteerRule(target: Json): void {
  target.if = { properties: { decision: { const: 'steer' } }, required: ['decision'] };
  target.then = { required: ['steering_context'] };
}

/** Either selector and evaluator, or a condition, never both (refineCheckForm in the model). */
function withCheckForm(target: Json): void {
  target.oneOf = [
    { required: ['selector', 'evaluator'], not: { required: ['condition'] } },
    { required: ['condition'], not: { anyOf: [{ required: ['selector'] }, { required: ['evaluator'] }] } },
  ];
}
