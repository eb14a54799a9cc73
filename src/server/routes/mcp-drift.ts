/**
 * `POST /mcp-servers/{name}/drift`: a gateway (`guardctl mcp-proxy --mcp-server-name`)
 * reports a tool of its pinned server that drifted, or its initialize instructions, once
 * per tool and kind per document version. The server counts it in
 * `<prefix>_mcp_tool_drift_total{server,tool,kind}` (instructions:
 * `<prefix>_mcp_instructions_drift_total{server}`), records an observability event
 * (`POST /observability/events/query`) and publishes it on the live stream (`guardctl
 * tui`), next to the agent's decisions.
 *
 * The event is one the server writes itself, naming no stored control (control_id 0,
 * control_name `mcp-tool-drift` or `mcp-instructions-drift`, as the step-depth and session
 * limits do): action `deny` when the gateway hides and refuses drifted tools (withholds the
 * instructions), `warn` when it forwards them.
 *
 * A regular key may report. The report is checked against the pinned document, so a key
 * cannot count a pinned, unchanged tool as changed; tool names of unpinned tools come from
 * the upstream and are bounded in the metric like agent and control names.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { mcpInstructionsFingerprint } from '../../gitops/canonical.js';
import { McpDriftReportSchema, printableToolName, type EvaluationSummary, type McpDriftReport, type McpServerRecord, type ObservabilityEvent } from '../../model/index.js';
import type { Observability } from '../../observability/index.js';
import { traceIdsFromHeaders } from '../../observability/trace.js';
import type { Store } from '../../store/types.js';
import { parseOr422 } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { HttpProblem, notFound } from '../problem.js';

/** The control name drift events carry (they name no stored control: control_id 0). */
export const DRIFT_CONTROL_NAME = 'mcp-tool-drift';
/** The control name of instructions drift events. */
export const INSTRUCTIONS_DRIFT_CONTROL_NAME = 'mcp-instructions-drift';

export const McpDriftAnswerSchema = z.strictObject({
  counted: z.literal(true).describe('Added to mcp_tool_drift_total (instructions: mcp_instructions_drift_total)'),
  recorded: z.boolean().describe('The event was queued to be stored (false with OBSERVABILITY_ENABLED=false or a full buffer)'),
});

const DOC = {
  operationId: 'reportMcpToolDrift',
  summary: 'Report a tool of a pinned MCP server that drifted (what a gateway sends)',
  description:
    'Counts mcp_tool_drift_total{server,tool,kind} and records an event (control_id 0, control_name mcp-tool-drift); ' +
    'kind instructions (no tool) counts mcp_instructions_drift_total{server} (control_name mcp-instructions-drift). ' +
    'The tool is named, never described; instructions are never sent. 404 when nothing is pinned under the name; 409 when the report contradicts the pinned document ' +
    '(changed: the tool is pinned with another fingerprint; unpinned: the tool is not pinned; instructions: the document pins none, or pins these).',
  tag: 'mcp',
  body: McpDriftReportSchema,
  responses: { 202: McpDriftAnswerSchema },
  errors: [409],
} satisfies OperationDoc;

export interface McpDriftRoutesOptions {
  store: Pick<Store, 'getMcpServerByName'>;
  observability: Observability;
}

/**
 * The pinned tools a report names. A gateway names a tool in printable form (the name
 * `read\u200b` as `read\\u{200b}`): a pinned tool is named by that form of its name.
 */
function pinsNamed(server: McpServerRecord, reported: string): McpServerRecord['tools'] {
  return server.tools.filter((t) => printableToolName(t.name) === reported);
}

/** Why a report does not match the pinned document, or null when it does. */
export function driftContradiction(server: McpServerRecord, report: McpDriftReport): string | null {
  if (report.kind === 'instructions') {
    if (server.instructions === undefined) return `McpServer "${server.name}" does not pin instructions (pinned by an earlier guardctl)`;
    return mcpInstructionsFingerprint(server.instructions) === report.fingerprint ? `the instructions have the fingerprint pinned in McpServer "${server.name}"` : null;
  }
  // Exactly: a live tool whose printable form is a pinned one's may be another tool (`a\\u{200b}` spelt out), unpinned.
  if (report.kind === 'unpinned') return server.tools.some((t) => t.name === report.tool) ? `tool "${report.tool}" is pinned in McpServer "${server.name}"` : null;
  const pins = pinsNamed(server, report.tool);
  if (pins.length === 0) return `tool "${report.tool}" is not pinned in McpServer "${server.name}", so it cannot have changed`;
  return pins.every((pin) => pin.fingerprint === report.fingerprint) ? `tool "${report.tool}" has the fingerprint pinned in McpServer "${server.name}"` : null;
}

/** What the log, the event and the live stream say of a drift (the tool's name, never its description). */
export function driftMessage(server: McpServerRecord, report: McpDriftReport): string {
  if (report.kind === 'instructions') {
    return `the instructions of MCP server "${server.name}" changed since they were pinned: ${report.on_drift === 'block' ? 'withheld from the client' : 'passed to the client (--on-drift warn)'}`;
  }
  const what = report.kind === 'changed' ? 'changed since it was pinned' : 'not pinned';
  const outcome = report.on_drift === 'block' ? 'hidden and refused' : 'listed and forwarded (--on-drift warn)';
  return `tool "${report.tool}" of MCP server "${server.name}" is ${what}: ${outcome}`;
}

export function driftEvent(server: McpServerRecord, report: McpDriftReport, ids: { trace_id: string; span_id: string }, now = new Date()): ObservabilityEvent {
  const instructions = report.kind === 'instructions';
  const tool = instructions ? null : report.tool;
  const pinned =
    report.kind === 'instructions'
      ? server.instructions === undefined
        ? null
        : mcpInstructionsFingerprint(server.instructions)
      : report.kind === 'unpinned'
        ? null
        : (pinsNamed(server, report.tool).find((t) => t.fingerprint !== report.fingerprint)?.fingerprint ?? null);
  return {
    control_execution_id: randomUUID(),
    ...ids,
    agent_name: report.agent_name,
    control_id: 0,
    control_name: instructions ? INSTRUCTIONS_DRIFT_CONTROL_NAME : DRIFT_CONTROL_NAME,
    check_stage: 'pre',
    // Instructions are read by the model, before any tool.
    applies_to: instructions ? 'llm' : 'tool',
    action: report.on_drift === 'block' ? 'deny' : 'warn',
    matched: true,
    confidence: 1,
    timestamp: now.toISOString(),
    execution_duration_ms: 0,
    evaluator_name: null,
    selector_path: null,
    error_message: null,
    metadata: {
      mcp_server: server.name,
      tool,
      kind: report.kind,
      on_drift: report.on_drift,
      live_fingerprint: report.fingerprint,
      pinned_fingerprint: pinned,
      message: driftMessage(server, report),
    },
    session_id: null,
  };
}

/**
 * The drift as the live stream shows a step: the tool (or `instructions`), refused or
 * withheld (deny) or forwarded with a warning (allow).
 */
export function driftSummary(event: ObservabilityEvent, stepName: string, message: string): EvaluationSummary {
  return {
    id: event.control_execution_id,
    timestamp: event.timestamp,
    trace_id: event.trace_id,
    agent_name: event.agent_name,
    step_name: stepName,
    step_type: event.applies_to,
    stage: 'pre',
    decision: event.action === 'deny' ? 'deny' : 'allow',
    session_id: null,
    duration_ms: 0,
    evaluated: 1,
    matches: [{ control_id: 0, control_name: event.control_name, action: event.action, message, steering_context: null, excerpt: null }],
    shadow_matches: [],
    errors: [],
  };
}

export const mcpDriftRoutes: FastifyPluginAsync<McpDriftRoutesOptions> = async (app, { store, observability }) => {
  const { metrics } = observability;
  app.post<{ Params: { name: string } }>('/mcp-servers/:name/drift', { config: { access: 'read', openapi: DOC } }, async (request, reply) => {
    const report = parseOr422(McpDriftReportSchema, request.body, 'drift report');
    const server = await store.getMcpServerByName(request.params.name);
    if (!server) throw notFound(`no MCP server is pinned as "${request.params.name}"`);
    const contradiction = driftContradiction(server, report);
    if (contradiction !== null) {
      throw new HttpProblem(409, 'conflict', `the drift report contradicts the pinned document: ${contradiction}; the gateway reads the document again within seconds`);
    }
    const tool = report.kind === 'instructions' ? null : report.tool;
    if (tool === null) metrics.mcpInstructionsDrift.child(metrics.mcpServerLabels.value(server.name)).inc();
    else metrics.mcpToolDrift.child(metrics.mcpServerLabels.value(server.name), metrics.mcpToolLabels.value(tool), report.kind).inc();
    const event = driftEvent(server, report, traceIdsFromHeaders(request.headers));
    const message = driftMessage(server, report);
    request.log.warn({ mcp_server: server.name, tool, kind: report.kind, agent_name: report.agent_name, on_drift: report.on_drift }, message);
    const { enqueued } = observability.ingest([event]);
    observability.hub.publishEvaluation(driftSummary(event, tool ?? 'instructions', message));
    return reply.code(202).send({ counted: true, recorded: enqueued > 0 });
  });
};
