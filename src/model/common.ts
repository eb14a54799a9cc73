import { z } from 'zod';

/** A free JSON object: metadata that guardctl stores and returns but never interprets. */
export const JsonObjectSchema = z.record(z.string(), z.unknown());
export type JsonObject = z.infer<typeof JsonObjectSchema>;

/**
 * What an agent does: call a tool, call a model, or (through the MCP gateway) read a
 * resource or get a prompt, so that controls can scope those too.
 */
export const StepTypeSchema = z.enum(['tool', 'llm', 'resource', 'prompt']);
export type StepType = z.infer<typeof StepTypeSchema>;
export const STEP_TYPES: readonly StepType[] = StepTypeSchema.options;

export const StageSchema = z.enum(['pre', 'post']);
export type Stage = z.infer<typeof StageSchema>;

/** `ask`: a person approves the exact step (docs/approvals.md); deny > steer > ask > allow, warn, log. */
export const DecisionSchema = z.enum(['allow', 'deny', 'steer', 'ask', 'warn', 'log']);
export type Decision = z.infer<typeof DecisionSchema>;

/**
 * Names of controls: short, printable, and safe in file names, URLs and YAML keys.
 * A name is the key GitOps uses to sync, so it must survive every one of those places.
 */
export const ControlNameSchema = z
  .string()
  .min(1, 'name must not be empty')
  .max(128, 'name must be at most 128 characters')
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:/ -]*$/,
    'name may hold letters, digits, spaces and . _ : / - and must start with a letter or digit',
  );

/** The one limit on agent names: the model, the routes (Fastify's maxParamLength), YAML validation. */
export const AGENT_NAME_MAX = 128;
/** What a normalised agent name may hold. */
export const AGENT_NAME_CHARS = /^[a-z0-9][a-z0-9._:-]*$/;

/** Agent names are normalised (trimmed, lowercased) before they are checked. */
export const AgentNameSchema = z
  .string()
  .transform((s) => normaliseAgentName(s))
  .pipe(
    z
      .string()
      .min(1, 'agent_name must not be empty')
      .max(AGENT_NAME_MAX, `agent_name must be at most ${AGENT_NAME_MAX} characters`)
      .regex(
        AGENT_NAME_CHARS,
        'agent_name may hold lowercase letters, digits and . _ : - and must start with a letter or digit',
      ),
  );

export function normaliseAgentName(name: string): string {
  return name.trim().toLowerCase();
}
