/**
 * Request envelopes of the REST API that the model does not already define. The model's
 * schemas stay the single source of truth for records and control data; these only wrap
 * them, and the OpenAPI document is generated from both.
 */
import { z } from 'zod';
import { AgentNameSchema, AgentPatchSchema, ControlDataSchema, ControlNameSchema } from '../model/index.js';

/** Only watch mode may own a control as `watch:<dir>`; it writes through the store, never the API. */
export const WATCH_PREFIX_MESSAGE = 'managed_by values starting with "watch:" are reserved for guardctl serve --watch';

/** A client-supplied owner label (`watch:` is reserved, see WATCH_PREFIX_MESSAGE). */
const ManagedBySchema = z
  .string()
  .min(1)
  .max(256)
  .refine((v) => !v.startsWith('watch:'), WATCH_PREFIX_MESSAGE);

const ownerFields = {
  /** Owner label: null when made by hand; `gitops:<owner>` when owned (`watch:<dir>` is watch mode's own). */
  managed_by: ManagedBySchema.nullable().optional(),
  /** Where the control is defined when it is owned, for example `controls/sql.yaml:3`. */
  source: z.string().min(1).max(1024).nullable().optional(),
};

/** `PUT /controls`: create with a name, and optionally the data in the same call. */
export const CreateControlBodySchema = z.strictObject({
  name: ControlNameSchema,
  data: ControlDataSchema.nullable().optional(),
  ...ownerFields,
});

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

const digits = (what: string) => z.string().regex(/^\d{1,15}$/, `${what} must be a whole number`).transform(Number);

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

/** `GET /controls?cursor&limit&name`. */
export const ListControlsQuerySchema = z.strictObject({
  cursor: digits('cursor').optional(),
  limit: digits('limit')
    .pipe(z.number().min(1, 'limit must be at least 1').max(MAX_PAGE_SIZE, `limit must be at most ${MAX_PAGE_SIZE}`))
    .optional(),
  name: z.string().min(1).max(128).optional(),
});

/** Changes per `POST /changes` request: one transaction each, bounded so none runs long. */
export const MAX_CHANGES_PER_REQUEST = 500;

/**
 * `POST /changes`: the store's StoreChange list as JSON. `data` is a parameter so the
 * route can leave it open (the engine's `validateControlData` checks it) while the
 * OpenAPI document shows the ControlData schema.
 */
function changesBodySchema(data: z.ZodType) {
  const control = z.strictObject({ name: ControlNameSchema, data: data.nullable().optional(), ...ownerFields });
  const patch = z.strictObject({
    name: ControlNameSchema.optional(),
    enabled: z.boolean().optional(),
    data: data.nullable().optional(),
    ...ownerFields,
  });
  const agent = AgentPatchSchema.extend({ agent_name: AgentNameSchema, managed_by: ownerFields.managed_by });
  const linkFields = { agent_name: AgentNameSchema, control_name: ControlNameSchema };
  const change = z.discriminatedUnion('op', [
    z.strictObject({ op: z.literal('create_control'), control }),
    z.strictObject({ op: z.literal('update_control'), name: ControlNameSchema, patch }),
    z.strictObject({ op: z.literal('delete_control'), name: ControlNameSchema }),
    z.strictObject({ op: z.literal('upsert_agent'), agent }),
    z.strictObject({ op: z.literal('link'), ...linkFields }),
    z.strictObject({ op: z.literal('unlink'), ...linkFields }),
  ]);
  return z.strictObject({
    changes: z
      .array(change)
      .min(1, 'give at least one change')
      .max(MAX_CHANGES_PER_REQUEST, `at most ${MAX_CHANGES_PER_REQUEST} changes per request`),
  });
}

export const ChangesBodySchema = changesBodySchema(ControlDataSchema);
export const ChangesEnvelopeSchema = changesBodySchema(z.unknown());
export type ChangesEnvelope = z.infer<typeof ChangesEnvelopeSchema>;
