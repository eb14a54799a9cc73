/**
 * PURE: `kind: McpServer` documents. A pinned MCP server: how to reach it, what it told the
 * model when someone reviewed it (its initialize `instructions`; per tool its title,
 * description, input and output schemas, annotations and their fingerprint), and which
 * tools the model may see. The gateway answers tools/list with pinned tools whose live
 * fingerprint matches, refuses calls to anything else, and withholds instructions that
 * differ from the pinned ones.
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

/**
 * `sha256-v2:` covers a tool's title, description, input schema, output schema and
 * annotations; `sha256:` (pins written by guardctl before v2) only its description, input
 * schema and annotations. Each pin is checked by the fields its own fingerprint covers.
 */
export const McpFingerprintSchema = z
  .string()
  .regex(/^sha256(-v2)?:[0-9a-f]{64}$/, 'a fingerprint is "sha256-v2:" (or, in pins of an earlier guardctl, "sha256:") and 64 lowercase hex digits');

/** How mcp-pin reached the server: a command it started, or a streamable HTTP URL. */
export const McpTransportSchema = z.union([
  z.strictObject({ command: z.array(z.string().min(1)).min(1).max(256) }),
  z.strictObject({ url: z.string().url().max(4096) }),
]);
export type McpTransport = z.infer<typeof McpTransportSchema>;

export const PinnedToolSchema = z.strictObject({
  name: McpToolNameSchema,
  title: z.string().max(65_536).optional(),
  description: z.string().max(65_536).optional(),
  input_schema: JsonObjectSchema,
  output_schema: JsonObjectSchema.optional(),
  annotations: JsonObjectSchema.optional(),
  fingerprint: McpFingerprintSchema,
});
export type PinnedTool = z.infer<typeof PinnedToolSchema>;

const mcpServerFields = {
  name: McpServerNameSchema,
  description: z.string().max(4096).optional(),
  transport: McpTransportSchema,
  /**
   * The server's initialize `instructions` (clients put them in the model's context): null
   * when it gives none. Absent (a pin of an earlier guardctl): not checked.
   */
  instructions: z.string().max(262_144).nullable().optional(),
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

/**
 * Whether allow/deny let the model see a tool. `allow_tools` names are compared exactly: a
 * name spelt otherwise is not allowed. `deny_tools` also hides every name that reads the
 * same (looseName): a server that renames a denied tool `Write_File` or `write\u200bfile`
 * gets no tool past the list, whatever `--on-drift` lets through unpinned.
 */
export function toolPermitted(server: Pick<McpServerBody, 'allow_tools' | 'deny_tools'>, tool: string): boolean {
  if (server.deny_tools !== undefined && server.deny_tools.length > 0) {
    const loose = looseName(tool);
    if (server.deny_tools.some((denied) => denied === tool || looseName(denied) === loose)) return false;
  }
  return server.allow_tools === undefined || server.allow_tools.includes(tool);
}

/**
 * A tool name as a reader takes it: compatibility forms folded (NFKC: full-width letters,
 * ligatures), letter case ignored, white space and every character a reader does not see
 * dropped: format characters and the rest Unicode calls default-ignorable (the combining
 * grapheme joiner, variation selectors, Hangul fillers). Letters of other scripts that look
 * alike (Cyrillic а for Latin a) stay apart.
 */
export function looseName(name: string): string {
  return name.normalize('NFKC').toLowerCase().replace(/[\p{Cf}\p{Default_Ignorable_Code_Point}\p{White_Space}]/gu, '');
}
