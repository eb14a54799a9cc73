/**
 * PURE: policies. A policy binds a list of controls to every agent its selector picks,
 * now and later: an agent registering with matching labels is guarded from its first
 * evaluation. An agent's controls are the union of its own links and its policies'.
 */
import { z } from 'zod';
import { ControlNameSchema } from './common.js';
import { AgentSelectorSchema } from './labels.js';

/** Policy names follow control names' rules: they are GitOps keys too. */
export const PolicyNameSchema = ControlNameSchema;

const policyFields = {
  name: PolicyNameSchema,
  description: z.string().max(4096).optional(),
  controls: z.array(ControlNameSchema).min(1, 'a policy binds at least one control').max(1000),
  agents: AgentSelectorSchema,
};

/** The body of `PUT /policies` and `PUT /policies/{id}`; controls are named. */
export const PolicyBodySchema = z.strictObject(policyFields);
export type PolicyBody = z.infer<typeof PolicyBodySchema>;

/** A policy as a store writes it: the body plus who owns it and where it is defined. */
export const NewPolicySchema = z.strictObject({
  ...policyFields,
  managed_by: z.string().min(1).max(256).nullable().optional(),
  source: z.string().min(1).max(1024).nullable().optional(),
});
export type NewPolicy = z.infer<typeof NewPolicySchema>;

export const PolicyRecordSchema = z.strictObject({
  policy_id: z.number().int().positive(),
  name: z.string(),
  description: z.string().nullable(),
  /** The bound controls' names, in the order given. */
  controls: z.array(z.string()),
  agents: AgentSelectorSchema,
  managed_by: z.string().nullable(),
  source: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type PolicyRecord = z.infer<typeof PolicyRecordSchema>;

/** A `kind: Policy` YAML document. */
export const PolicyDocumentSchema = z.strictObject({ kind: z.literal('Policy'), ...policyFields });
export type PolicyDocument = z.infer<typeof PolicyDocumentSchema>;

/** Where a control of an agent's set comes from: its own link, or a policy by name. */
export type BindingSource = 'link' | `policy:${string}`;

export function policySource(policyName: string): BindingSource {
  return `policy:${policyName}`;
}

/**
 * The warning for a policy whose every bound control is disabled: legal (controls are
 * switched off during an incident), and it guards nobody until one is enabled again. The
 * same words from `validate` and from the server's policy writes.
 */
export function bindsOnlyDisabledMessage(policyName: string): string {
  return `policy "${policyName}" binds only disabled controls: it guards nothing until one of them is enabled`;
}
