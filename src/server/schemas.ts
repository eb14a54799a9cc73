/**
 * Request envelopes of the REST API that the model does not already define. The model's
 * schemas stay the single source of truth for records and control data; these only wrap
 * them, and the OpenAPI document is generated from both.
 */
import { z } from 'zod';
import { changeSchemasOf, ControlDataSchema, ControlNameSchema, OwnerLabelSchema, ownerFieldsOf } from '../model/index.js';

/** Only watch mode may own a control as `watch:<dir>`; it writes through the store, never the API. */
export const WATCH_PREFIX_MESSAGE = 'managed_by values starting with "watch:" are reserved for guardctl serve --watch';

/** A client-supplied owner label (`watch:` is reserved, see WATCH_PREFIX_MESSAGE). */
const ManagedBySchema = OwnerLabelSchema.refine((v) => !v.startsWith('watch:'), WATCH_PREFIX_MESSAGE);

/**
 * Owner label (null when made by hand; `gitops:<owner>` when owned; `watch:<dir>` is watch
 * mode's own) and where an owned control is defined, for example `controls/sql.yaml:3`.
 */
const ownerFields = ownerFieldsOf(ManagedBySchema);

/** `PUT /controls`: create with a name, and optionally the data in the same call (a create_control change's control). */
export const CreateControlBodySchema = changeSchemasOf(ControlDataSchema, ManagedBySchema).control;

/** `PATCH /controls/{id}`: at least one field. */
export const ControlPatchBodySchema = z
  .strictObject({ name: ControlNameSchema.optional(), enabled: z.boolean().optional(), ...ownerFields })
  .refine((patch) => Object.values(patch).some((v) => v !== undefined), {
    message: 'give at least one of name, enabled, managed_by, source',
  });

/** `PUT /controls/{id}/data` and `POST /controls/validate`. */
export const ControlDataBodySchema = z.strictObject({ data: ControlDataSchema });

/**
 * The same envelopes with `data` left open: the data itself goes through the engine's
 * `validateControlData` (the one implementation, which also checks evaluator configs).
 */
export const CreateControlEnvelopeSchema = CreateControlBodySchema.extend({ data: z.unknown().optional() });
export const ControlDataEnvelopeSchema = z.strictObject({ data: z.unknown() });

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

/**
 * A whole number in a query string: checked as digits (the message names the parameter),
 * shown in the OpenAPI document as the integer it is (openapi.ts reads `x-query-param`).
 */
export const queryInteger = (what: string, description: string, shown: Record<string, unknown> = { type: 'integer', minimum: 0 }) =>
  z
    .string()
    .regex(/^\d{1,15}$/, `${what} must be a whole number`)
    .transform(Number)
    .meta({ description, 'x-query-param': shown });

/** `limit` of a cursor-paged list. */
export const pageLimit = () =>
  queryInteger('limit', `Page size, 1 to ${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}`, { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE })
    .pipe(z.number().min(1, 'limit must be at least 1').max(MAX_PAGE_SIZE, `limit must be at most ${MAX_PAGE_SIZE}`))
    .optional();

/** `cursor` of a cursor-paged list. */
export const pageCursor = () => queryInteger('cursor', 'next_cursor of the previous page').optional();

/** `PUT /policies` and `PUT /policies/{id}`: the whole policy (an upsert_policy change's policy). */
export const PolicyWriteBodySchema = changeSchemasOf(ControlDataSchema, ManagedBySchema).policy;

/** `PUT /mcp-servers/{name}`: the whole pinned server (an upsert_mcp_server change's mcp_server). */
export const McpServerWriteBodySchema = changeSchemasOf(ControlDataSchema, ManagedBySchema).mcp_server;

/** `GET /mcp-servers?cursor&limit`. */
export const ListMcpServersQuerySchema = z.strictObject({ cursor: pageCursor(), limit: pageLimit() });

/** `GET /policies?cursor&limit&name`. */
export const ListPoliciesQuerySchema = z.strictObject({
  cursor: pageCursor(),
  limit: pageLimit(),
  name: z.string().min(1).max(128).optional().describe('Exact name lookup: a page of zero or one policy'),
});

/** `GET /controls?cursor&limit&name`. */
export const ListControlsQuerySchema = z.strictObject({
  cursor: pageCursor(),
  limit: pageLimit(),
  name: z.string().min(1).max(128).optional().describe('Exact name lookup: a page of zero or one control'),
});

/** Changes per `POST /changes` request: one transaction each, bounded so none runs long. */
export const MAX_CHANGES_PER_REQUEST = 500;

/**
 * `POST /changes`: the model's change list as JSON, with client owner labels. `data` is a
 * parameter so the route can leave it open (the engine's `validateControlData` checks it)
 * while the OpenAPI document shows the ControlData schema.
 */
function changesBodySchema(data: z.ZodType) {
  return z.strictObject({
    changes: z
      .array(changeSchemasOf(data, ManagedBySchema).change)
      .min(1, 'give at least one change')
      .max(MAX_CHANGES_PER_REQUEST, `at most ${MAX_CHANGES_PER_REQUEST} changes per request`),
    expected_revision: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe('Apply only if the store is still at this revision (GET /changes/revision, or the revision of the previous batch); else 409 stale_revision and nothing is written'),
  });
}

export const ChangesBodySchema = changesBodySchema(ControlDataSchema);
export const ChangesEnvelopeSchema = changesBodySchema(z.unknown());
export type ChangesEnvelope = z.infer<typeof ChangesEnvelopeSchema>;
