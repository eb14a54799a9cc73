/**
 * PURE: what a gateway tells the guard server when a tool of its pinned MCP server drifted
 * (`POST /mcp-servers/{name}/drift`). The tool name comes from the upstream server, which is
 * exactly who a pin distrusts: the report carries its name (printable only, see
 * `printableToolName`) and the live fingerprint, never its description, so nothing the
 * upstream wrote reaches a log, a metric or a dashboard beyond the name.
 */
import { z } from 'zod';
import { AgentNameSchema } from './common.js';
import { McpFingerprintSchema, McpToolNameSchema } from './mcp-server.js';

export const MCP_DRIFT_KINDS = ['changed', 'unpinned'] as const;
export type McpDriftKind = (typeof MCP_DRIFT_KINDS)[number];

/**
 * Code points that would let a name hide or forge text where it is shown (terminals, logs,
 * dashboards): control characters, format characters (bidi overrides, zero-width joiners),
 * lone surrogates, private-use and unassigned code points, line and paragraph separators.
 */
const UNPRINTABLE = /[\p{C}\p{Zl}\p{Zp}]/u;
const UNPRINTABLE_ALL = /[\p{C}\p{Zl}\p{Zp}]/gu;
const TOOL_NAME_MAX = 256;

/**
 * A tool name fit to be shown: unprintable code points spelt `\u{...}`, the whole at most
 * 256 characters (cut with `…`). Names that are printable already come back unchanged.
 */
export function printableToolName(name: string): string {
  const escaped = UNPRINTABLE.test(name) ? name.replace(UNPRINTABLE_ALL, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`) : name;
  return escaped.length <= TOOL_NAME_MAX ? escaped : `${escaped.slice(0, TOOL_NAME_MAX - 1)}…`;
}

/** UNPRINTABLE but for a line break and a tab, which show as themselves in a text. */
const UNPRINTABLE_IN_TEXT = /(?![\n\t])[\p{C}\p{Zl}\p{Zp}]/gu;

/**
 * A text fit to be read by a reviewer (a description, instructions, a plan line): the
 * unprintable code points spelt `\u{...}` as in `printableToolName`, line breaks and tabs
 * kept. A server's text reaches the model whole: tag characters (U+E0000-U+E007F) spell
 * words a model reads and a terminal or a browser draws as nothing, and escapes or a
 * carriage return can paint over a line of a terminal.
 */
export function printableText(text: string): string {
  return text.replace(UNPRINTABLE_IN_TEXT, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/** A reported tool name: what `printableToolName` makes (1 to 256 printable characters). */
export const McpDriftToolNameSchema = McpToolNameSchema.refine((name) => !UNPRINTABLE.test(name), {
  message: 'a reported tool name must hold printable characters only (the gateway spells the others \\u{...})',
});

/** A drifted tool. */
export const McpToolDriftReportSchema = z.strictObject({
  /** The gateway's --agent: the event is recorded under it. */
  agent_name: AgentNameSchema,
  tool: McpDriftToolNameSchema,
  kind: z.enum(MCP_DRIFT_KINDS),
  /** The fingerprint of the tool as the upstream declares it now. */
  fingerprint: McpFingerprintSchema,
  /** The gateway's --on-drift: block (hidden and refused) or warn (listed and forwarded). */
  on_drift: z.enum(['block', 'warn']),
});

/** Instructions in the server's initialize answer that differ from the pinned ones (their text is never sent). */
export const McpInstructionsDriftReportSchema = z.strictObject({
  agent_name: AgentNameSchema,
  kind: z.literal('instructions'),
  /** The fingerprint of the instructions the upstream answers now. */
  fingerprint: McpFingerprintSchema,
  /** The gateway's --on-drift: block (withheld from the client) or warn (passed). */
  on_drift: z.enum(['block', 'warn']),
});

/** The body of `POST /mcp-servers/{name}/drift`. Strict: a description (or anything else) is refused. */
export const McpDriftReportSchema = z.union([McpToolDriftReportSchema, McpInstructionsDriftReportSchema]);
export type McpDriftReport = z.infer<typeof McpDriftReportSchema>;
export type McpDriftReportInput = z.input<typeof McpDriftReportSchema>;
