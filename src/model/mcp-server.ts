/**
 * PURE: `kind: McpServer` documents. A pinned MCP server: how to reach it, the tools it
 * declared when someone reviewed it (description, input schema, annotations and their
 * fingerprint), and which of them the model may see. The gateway answers tools/list with
 * pinned tools whose live fingerprint matches and refuses calls to anything else.
 */
import { z } from 'zod';
import { ControlNameSchema, JsonObjectSchema } from './common.js';

/** McpServer names follow control names' rules: they are GitOps keys and `--mcp-server-name` values. */
export const McpServerNameSchema = ControlNameSchema;

/**
 * A tool name exactly as the upstream declares it. No trimming or case folding anywhere:
 * `Delete_File` and ` delete_file` are other tools than `delete_file`.
 */
export const McpToolNameSchema = z.string().min(1, 'a tool name must not be empty').max(256);

export const McpFingerprintSchema = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'a fingerprint is "sha256:" and 64 lowercase hex digits');

/** How mcp-pin reached the server: a command it started, or a streamable HTTP URL. */
export const McpTransportSchema = z.union([
  z.strictObject({ command: z.array(z.string().min(1)).min(1).max(256) }),
  z.strictObject({ url: z.string().url().max(4096) }),
]);
export type McpTransport = z.infer<typeof McpTransportSchema>;

export const PinnedToolSchema = z.strictObject({
  name: McpToolNameSchema,
  description: z.string().max(65_536).optional(),
  input_schema: JsonObjectSchema,
  annotations: JsonObjectSchema.optional(),
  fingerprint: McpFingerprintSchema,
});
export type PinnedTool = z.infer<typeof PinnedToolSchema>;

const mcpServerFields = {
  name: McpServerNameSchema,
  description: z.string().max(4096).optional(),
  transport: McpTransportSchema,
  /** When given, only these tools are listed and callable. */
  allow_tools: z.array(McpToolNameSchema).max(1000).optional(),
  /** Never listed nor callable, whatever allow_tools says. */
  deny_tools: z.array(McpToolNameSchema).max(1000).optional(),
  tools: z.array(PinnedToolSchema).max(1000),
};

/** The body of `PUT /mcp-servers/{name}`. */
export const McpServerBodySchema = z.strictObject(mcpServerFields);
export type McpServerBody = z.infer<typeof McpServerBodySchema>;

/** An McpServer as a store writes it: the body plus who owns it and where it is defined. */
export const NewMcpServerSchema = z.strictObject({
  ...mcpServerFields,
  managed_by: z.string().min(1).max(256).nullable().optional(),
  source: z.string().min(1).max(1024).nullable().optional(),
});
export type NewMcpServer = z.infer<typeof NewMcpServerSchema>;

export const McpServerRecordSchema = z.strictObject({
  mcp_server_id: z.number().int().positive(),
  ...mcpServerFields,
  managed_by: z.string().nullable(),
  source: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type McpServerRecord = z.infer<typeof McpServerRecordSchema>;

/** A `kind: McpServer` YAML document. */
export const McpServerDocumentSchema = z.strictObject({ kind: z.literal('McpServer'), ...mcpServerFields });
export type McpServerDocument = z.infer<typeof McpServerDocumentSchema>;

/** Whether allow/deny let the model see a tool (names compared exactly). */
export function toolPermitted(server: Pick<McpServerBody, 'allow_tools' | 'deny_tools'>, tool: string): boolean {
  if (server.deny_tools?.includes(tool)) return false;
  return server.allow_tools === undefined || server.allow_tools.includes(tool);
}
