import { z } from 'zod';
import { AgentNameSchema, ControlNameSchema, JsonObjectSchema, StepTypeSchema } from './common.js';
import { LabelsSchema } from './labels.js';

/** A step an agent declares at registration: a tool or a model it may call. */
export const StepSchemaDeclSchema = z.strictObject({
  type: StepTypeSchema,
  name: z.string().min(1).max(256),
  description: z.string().max(4096).optional(),
  input_schema: JsonObjectSchema.optional(),
  output_schema: JsonObjectSchema.optional(),
  metadata: JsonObjectSchema.optional(),
});
export type StepDecl = z.infer<typeof StepSchemaDeclSchema>;

export const ConflictModeSchema = z.enum(['strict', 'overwrite']);
export type ConflictMode = z.infer<typeof ConflictModeSchema>;

/**
 * The body of `POST /agents/initAgent`. Fields left out keep their stored values, so an
 * SDK that registers by name alone never wipes what GitOps declared about the agent.
 */
export const AgentRegistrationSchema = z.strictObject({
  agent_name: AgentNameSchema,
  agent_description: z.string().max(4096).optional(),
  agent_version: z.string().max(128).optional(),
  steps: z.array(StepSchemaDeclSchema).max(1000).optional(),
  conflict_mode: ConflictModeSchema.default('overwrite'),
  metadata: JsonObjectSchema.optional(),
  /** Kubernetes-style labels; policies select agents by them. */
  labels: LabelsSchema.optional(),
});
export type AgentRegistration = z.infer<typeof AgentRegistrationSchema>;

/** The body of `PATCH /agents/{agent_name}`. */
export const AgentPatchSchema = z.strictObject({
  agent_description: z.string().max(4096).nullable().optional(),
  agent_version: z.string().max(128).nullable().optional(),
  steps: z.array(StepSchemaDeclSchema).max(1000).optional(),
  metadata: JsonObjectSchema.nullable().optional(),
  /** Replaces every label (`{}` removes them all). */
  labels: LabelsSchema.optional(),
});
export type AgentPatch = z.infer<typeof AgentPatchSchema>;

/** The agent record the server returns. */
export const AgentRecordSchema = z.strictObject({
  agent_name: z.string(),
  agent_description: z.string().nullable(),
  agent_version: z.string().nullable(),
  steps: z.array(StepSchemaDeclSchema),
  metadata: JsonObjectSchema.nullable(),
  labels: z.record(z.string(), z.string()),
  managed_by: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type AgentRecord = z.infer<typeof AgentRecordSchema>;

/** A `kind: Agent` YAML document: an agent and the names of the controls linked to it. */
export const AgentDocumentSchema = z.strictObject({
  kind: z.literal('Agent'),
  agent_name: AgentNameSchema,
  agent_description: z.string().max(4096).optional(),
  agent_version: z.string().max(128).optional(),
  steps: z.array(StepSchemaDeclSchema).max(1000).optional(),
  metadata: JsonObjectSchema.optional(),
  labels: LabelsSchema.optional(),
  controls: z.array(ControlNameSchema).default([]),
});
export type AgentDocument = z.infer<typeof AgentDocumentSchema>;
