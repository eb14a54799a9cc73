/**
 * PURE: the change vocabulary. One change is one write of a batch that a store applies in
 * a single transaction: `POST /changes`, `guardctl apply` and hot reload all speak it.
 * Controls and links are named, never numbered, so one batch can create a control and
 * link it. The store's types, the server's request schema and the client's body type are
 * all derived from `changeSchemasOf`; only the data and owner schemas differ between them.
 */
import { z } from 'zod';
import { AgentPatchSchema } from './agent.js';
import { AgentNameSchema, ControlNameSchema } from './common.js';
import { ControlDataSchema } from './control.js';
import { PolicyBodySchema, PolicyNameSchema } from './policy.js';
import { McpServerBodySchema, McpServerNameSchema } from './mcp-server.js';

/** Who owns a control: `gitops:<owner>`, `watch:<dir>`, or null when made by hand. */
export const OwnerLabelSchema = z.string().min(1).max(256);

/** Where an owned control is defined, for example `controls/sql.yaml:3`. */
export const ControlSourceSchema = z.string().min(1).max(1024);

/** The two bookkeeping fields of an owned control, with the owner label schema given. */
export function ownerFieldsOf<M extends z.ZodType>(managedBy: M) {
  return {
    managed_by: managedBy.nullable().optional(),
    source: ControlSourceSchema.nullable().optional(),
  };
}

/**
 * The change schemas around a schema of control data and one of owner labels. The store
 * takes parsed ControlData and any label; the server's request schema leaves data open
 * (the engine validates it) and refuses labels reserved for watch mode.
 */
export function changeSchemasOf<D extends z.ZodType, M extends z.ZodType>(data: D, managedBy: M) {
  const owner = ownerFieldsOf(managedBy);
  const control = z.strictObject({ name: ControlNameSchema, data: data.nullable().optional(), ...owner });
  const patch = z.strictObject({
    name: ControlNameSchema.optional(),
    enabled: z.boolean().optional(),
    /** Replaces the data; its `enabled` becomes the record's `enabled`. */
    data: data.nullable().optional(),
    ...owner,
  });
  const agent = AgentPatchSchema.extend({ agent_name: AgentNameSchema, managed_by: owner.managed_by });
  const link = { agent_name: AgentNameSchema, control_name: ControlNameSchema };
  const policy = PolicyBodySchema.extend(owner);
  const mcpServer = McpServerBodySchema.extend(owner);
  const change = z.discriminatedUnion('op', [
    z.strictObject({ op: z.literal('create_control'), control }),
    z.strictObject({ op: z.literal('update_control'), name: ControlNameSchema, patch }),
    z.strictObject({ op: z.literal('delete_control'), name: ControlNameSchema }),
    /** Replaces the whole agent; a change that leaves `managed_by` out keeps the owner it had. */
    z.strictObject({ op: z.literal('upsert_agent'), agent }),
    z.strictObject({ op: z.literal('link'), ...link }),
    z.strictObject({ op: z.literal('unlink'), ...link }),
    /** Creates the policy or replaces it whole; its members are resolved in the same transaction. */
    z.strictObject({ op: z.literal('upsert_policy'), policy }),
    z.strictObject({ op: z.literal('delete_policy'), name: PolicyNameSchema }),
    /** Creates the pinned MCP server or replaces it whole. */
    z.strictObject({ op: z.literal('upsert_mcp_server'), mcp_server: mcpServer }),
    z.strictObject({ op: z.literal('delete_mcp_server'), name: McpServerNameSchema }),
  ]);
  return { control, patch, agent, policy, mcp_server: mcpServer, change };
}

const storeSchemas = changeSchemasOf(ControlDataSchema, OwnerLabelSchema);

export const NewControlSchema = storeSchemas.control;
export const ControlPatchSchema = storeSchemas.patch;
export const NewAgentSchema = storeSchemas.agent;
export const ChangeSchema = storeSchemas.change;

export type NewControl = z.infer<typeof NewControlSchema>;
export type ControlPatch = z.infer<typeof ControlPatchSchema>;
export type NewAgent = z.infer<typeof NewAgentSchema>;
/** One write of a batch, as a store applies it. */
export type StoreChange = z.infer<typeof ChangeSchema>;
/** A change as a client sends it in `POST /changes`: control data may leave out what has defaults. */
export type ChangeBody = z.input<typeof ChangeSchema>;

/** A short human name of a change, for messages that say which change of a batch failed. */
export function changeLabel(change: StoreChange, index: number): string {
  return `change ${index + 1} (${whatOf(change)})`;
}

function whatOf(change: StoreChange): string {
  switch (change.op) {
    case 'create_control':
      return `create_control "${change.control.name}"`;
    case 'update_control':
    case 'delete_control':
      return `${change.op} "${change.name}"`;
    case 'upsert_agent':
      return `upsert_agent "${change.agent.agent_name}"`;
    case 'link':
    case 'unlink':
      return `${change.op} "${change.agent_name}" -> "${change.control_name}"`;
    case 'upsert_policy':
      return `upsert_policy "${change.policy.name}"`;
    case 'delete_policy':
      return `delete_policy "${change.name}"`;
    case 'upsert_mcp_server':
      return `upsert_mcp_server "${change.mcp_server.name}"`;
    case 'delete_mcp_server':
      return `delete_mcp_server "${change.name}"`;
  }
}

/** The policy a change names, or null for a control, link or agent change. */
export function policyNameOf(change: StoreChange): string | null {
  switch (change.op) {
    case 'upsert_policy':
      return change.policy.name;
    case 'delete_policy':
      return change.name;
    case 'create_control':
    case 'update_control':
    case 'delete_control':
    case 'link':
    case 'unlink':
    case 'upsert_agent':
    case 'upsert_mcp_server':
    case 'delete_mcp_server':
      return null;
  }
}

/** The control a change names, or null for an agent or policy change. */
export function controlNameOf(change: StoreChange): string | null {
  switch (change.op) {
    case 'create_control':
      return change.control.name;
    case 'update_control':
    case 'delete_control':
      return change.name;
    case 'link':
    case 'unlink':
      return change.control_name;
    case 'upsert_agent':
    case 'upsert_policy':
    case 'delete_policy':
    case 'upsert_mcp_server':
    case 'delete_mcp_server':
      return null;
  }
}
