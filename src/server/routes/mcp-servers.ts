/**
 * Pinned MCP servers (`kind: McpServer`): list and get with a regular key (a gateway reads
 * its server's document by name, with If-None-Match so following changes costs a 304), and
 * create/replace/delete with an admin key. Writes are one-change batches of the same
 * changes `guardctl apply` sends, so both paths check and store the same way.
 */
import { createHash } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { FINGERPRINTED_FIELDS, fingerprintMismatches, fingerprintVersionOf, type FingerprintedTool } from '../../gitops/canonical.js';
import { McpServerRecordSchema, printableToolName, type FieldIssue, type McpServerRecord, type StoreChange } from '../../model/index.js';
import { apiOrigin, isWatchManaged, parseOr422, type ServerContext } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { HttpProblem, notFound } from '../problem.js';
import { DEFAULT_PAGE_SIZE, ListMcpServersQuerySchema, McpServerWriteBodySchema } from '../schemas.js';

/** `GET /mcp-servers`: a page, oldest first. */
export const McpServerPageSchema = z.strictObject({
  mcp_servers: z.array(McpServerRecordSchema),
  pagination: z.strictObject({
    limit: z.number().int(),
    next_cursor: z.number().int().nullable().describe('Pass as cursor for the next page; null on the last page'),
    has_more: z.boolean(),
    total: z.number().int().describe('Pinned MCP servers in the store'),
  }),
});

const DOCS = {
  list: { operationId: 'listMcpServers', summary: 'A page of pinned MCP servers (cursor-based)', tag: 'mcp', query: ListMcpServersQuerySchema, responses: { 200: McpServerPageSchema } },
  get: {
    operationId: 'getMcpServer',
    summary: 'A pinned MCP server by name (what a gateway started with --mcp-server-name reads)',
    description: 'Answers an ETag; with If-None-Match naming it, 304 and no body.',
    tag: 'mcp',
    responses: { 200: McpServerRecordSchema },
  },
  put: {
    operationId: 'putMcpServer',
    summary: 'Create (201) or replace (200) a pinned MCP server',
    description: '422 when a pinned fingerprint disagrees with the tool fields it covers, a tool is pinned twice, or the name in the body is not the one in the path.',
    tag: 'mcp',
    body: McpServerWriteBodySchema,
    responses: { 200: McpServerRecordSchema, 201: McpServerRecordSchema },
    errors: [409],
  },
  delete: {
    operationId: 'deleteMcpServer',
    summary: 'Delete a pinned MCP server (its gateways pass tools through unpinned; with --require-pin they list none and refuse every call)',
    tag: 'mcp',
    responses: { 200: z.strictObject({ deleted: z.literal(true) }) },
    errors: [409],
  },
} satisfies Record<string, OperationDoc>;

type NameParams = { Params: { name: string } };

/**
 * A 422 for each pinned tool whose fingerprint is not the one its fields hash to, and for
 * each tool pinned again under a name pinned before it (the gateway would check the last,
 * where a reader of the document may have reviewed the first).
 */
export function pinnedToolIssues(tools: ReadonlyArray<FingerprintedTool & { name: string; fingerprint: string }>, prefix: string): FieldIssue[] {
  const seen = new Set<string>();
  const twice: FieldIssue[] = [];
  tools.forEach(({ name }, index) => {
    if (seen.has(name)) twice.push({ field: `${prefix}tools[${index}].name`, code: 'duplicate_tool', message: `tool "${printableToolName(name)}" is pinned twice; an MCP server declares each tool once: re-pin with guardctl mcp-pin` });
    seen.add(name);
  });
  const mismatched = fingerprintMismatches(tools).map(({ index, actual }) => ({
    field: `${prefix}tools[${index}].fingerprint`,
    code: 'fingerprint_mismatch',
    message: `does not match the tool's ${FINGERPRINTED_FIELDS[fingerprintVersionOf(actual)].join(', ')} (they hash to ${actual}); re-pin with guardctl mcp-pin`,
  }));
  return [...twice, ...mismatched];
}

export function etagOf(record: McpServerRecord): string {
  return `"${createHash('sha256').update(JSON.stringify(record)).digest('base64url').slice(0, 27)}"`;
}

export const mcpServerRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const { store } = ctx;

  async function existing(name: string): Promise<McpServerRecord> {
    const server = await store.getMcpServerByName(name);
    if (!server) throw notFound(`no MCP server is pinned as "${name}"`);
    return server;
  }

  function refuseWatched(server: McpServerRecord | null): void {
    if (!server || !isWatchManaged(server.managed_by)) return;
    const where = server.source ? ` edit ${server.source} instead` : ' edit its file in the watched directory instead';
    throw new HttpProblem(409, 'read_only', `MCP server "${server.name}" is managed by ${server.managed_by} and read-only through the API;${where}`);
  }

  async function write(change: StoreChange, request: Parameters<typeof apiOrigin>[1]): Promise<void> {
    await store.applyChanges([change], apiOrigin(ctx, request));
  }

  app.get('/mcp-servers', { config: { access: 'read', openapi: DOCS.list } }, async (request) => {
    const query = parseOr422(ListMcpServersQuerySchema, request.query, 'query');
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const page = await store.listMcpServers({ cursor: query.cursor, limit });
    return { mcp_servers: page.mcp_servers, pagination: { limit, next_cursor: page.next_cursor, has_more: page.has_more, total: page.total } };
  });

  app.get<NameParams>('/mcp-servers/:name', { config: { access: 'read', openapi: DOCS.get } }, async (request, reply) => {
    const server = await existing(request.params.name);
    const etag = etagOf(server);
    reply.header('ETag', etag);
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    return server;
  });

  app.put<NameParams>('/mcp-servers/:name', { config: { access: 'admin', openapi: DOCS.put } }, async (request, reply) => {
    const body = parseOr422(McpServerWriteBodySchema, request.body, 'request body');
    if (body.name !== request.params.name) {
      throw new HttpProblem(422, 'validation_failed', 'the request body is not valid', [{ field: 'name', code: 'name_mismatch', message: `the body names "${body.name}", the path "${request.params.name}"` }]);
    }
    const issues = pinnedToolIssues(body.tools, '');
    if (issues.length > 0) throw new HttpProblem(422, 'validation_failed', 'the pinned tools are refused', issues);
    const before = await store.getMcpServerByName(body.name);
    refuseWatched(before);
    await write({ op: 'upsert_mcp_server', mcp_server: body }, request);
    return reply.code(before ? 200 : 201).send(await existing(body.name));
  });

  app.delete<NameParams>('/mcp-servers/:name', { config: { access: 'admin', openapi: DOCS.delete } }, async (request) => {
    refuseWatched(await existing(request.params.name));
    await write({ op: 'delete_mcp_server', name: request.params.name }, request);
    return { deleted: true };
  });
};
