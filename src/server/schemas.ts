/**
 * Request envelopes of the REST API that the model does not already define. The model's
 * schemas stay the single source of truth for records and control data; these only wrap
 * them, and the OpenAPI document is generated from both.
 */
import { z } from 'zod';
import { ControlDataSchema, ControlNameSchema } from '../model/index.js';

const ownerFields = {
  /** Owner label: null when made by hand; `gitops:<owner>` or `watch:<dir>` when owned. */
  managed_by: z.string().min(1).max(256).nullable().optional(),
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
