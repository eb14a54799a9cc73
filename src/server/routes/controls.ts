import type { FastifyPluginAsync } from 'fastify';
import { validateControlData } from '../../engine/index.js';
import { z } from 'zod';
import { ControlDataSchema, ControlRecordSchema, type ControlData, type ControlRecord, type FieldIssue } from '../../model/index.js';
import { apiOrigin, controlIdOf, isWatchManaged, parseOr422, type ServerContext } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { HttpProblem, invalid, notFound } from '../problem.js';
import {
  ControlDataBodySchema,
  ControlDataEnvelopeSchema,
  ControlPatchBodySchema,
  CreateControlBodySchema,
  CreateControlEnvelopeSchema,
  DEFAULT_PAGE_SIZE,
  ListControlsQuerySchema,
} from '../schemas.js';

/** `GET /controls`: a page, oldest first. */
export const ControlPageSchema = z.strictObject({
  controls: z.array(ControlRecordSchema),
  pagination: z.strictObject({
    limit: z.number().int(),
    next_cursor: z.number().int().nullable().describe('Pass as cursor for the next page; null on the last page'),
    has_more: z.boolean(),
    total: z.number().int().describe('Controls in the store (with name: 0 or 1)'),
  }),
});

const DOCS = {
  create: {
    operationId: 'createControl',
    summary: 'Create a control, optionally with its data',
    tag: 'controls',
    body: CreateControlBodySchema,
    responses: { 201: ControlRecordSchema },
    errors: [409],
  },
  list: { operationId: 'listControls', summary: 'A page of controls (cursor-based)', tag: 'controls', query: ListControlsQuerySchema, responses: { 200: ControlPageSchema } },
  validate: {
    operationId: 'validateControlData',
    summary: 'Validate control data without saving',
    description: 'Valid data answers 200; invalid data answers 422 with every invalid field in errors[].',
    tag: 'controls',
    body: ControlDataBodySchema,
    responses: { 200: z.strictObject({ success: z.literal(true) }) },
    storeless: true,
  },
  get: { operationId: 'getControl', summary: 'A control', tag: 'controls', responses: { 200: ControlRecordSchema } },
  patch: {
    operationId: 'updateControl',
    summary: 'Rename, enable or disable a control, or change its owner label',
    tag: 'controls',
    body: ControlPatchBodySchema,
    responses: { 200: ControlRecordSchema },
    errors: [409],
  },
  delete: {
    operationId: 'deleteControl',
    summary: 'Delete a control and unlink it from every agent',
    description:
      '409 conflict (errors[].code bound_by_policy, naming the policies) while any policy binds the control: ' +
      'take it out of their controls or delete them first. 409 read_only for a control watch mode manages.',
    tag: 'controls',
    responses: { 200: z.strictObject({ deleted: z.literal(true), unlinked_agents: z.array(z.string()) }) },
    errors: [409],
  },
  getData: {
    operationId: 'getControlData',
    summary: 'The control data (404 while the control has none)',
    tag: 'controls',
    responses: { 200: z.strictObject({ data: ControlDataSchema }) },
  },
  putData: {
    operationId: 'setControlData',
    summary: 'Replace the control data',
    tag: 'controls',
    body: ControlDataBodySchema,
    description:
      'warnings names each session label the data requires (scope.session_labels) that no stored control adds (action.session_labels): ' +
      'the control would never apply until one does (docs/sessions.md). The data is stored all the same.',
    responses: {
      200: z.strictObject({
        success: z.literal(true),
        control_id: z.number().int().positive(),
        data: ControlDataSchema,
        warnings: z.array(z.strictObject({ field: z.string(), code: z.string(), message: z.string() })).optional(),
      }),
    },
    errors: [409],
  },
} satisfies Record<string, OperationDoc>;

/** Controls: CRUD, control data, validation without saving (SPEC section 4). */
export const controlRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const { store, registry, controlSets } = ctx;

  /** Runs the one validation implementation; issue paths are prefixed with `data`. */
  function checkData(data: unknown): ControlData {
    const outcome = validateControlData(data, registry);
    if (outcome.ok) return outcome.data;
    throw invalid('the control data is not valid', outcome.issues.map(prefixData));
  }

  async function existing(id: number): Promise<ControlRecord> {
    const control = await store.getControl(id);
    if (!control) throw notFound(`no control has id ${id}`);
    return control;
  }

  async function writable(id: number): Promise<ControlRecord> {
    const control = await existing(id);
    if (isWatchManaged(control.managed_by)) throw readOnly(control);
    return control;
  }

  async function invalidateAgentsOf(id: number): Promise<void> {
    controlSets.invalidate(await store.agentsOfControl(id));
  }

  app.put('/controls', { config: { access: 'admin', openapi: DOCS.create } }, async (request, reply) => {
    const body = parseOr422(CreateControlEnvelopeSchema, request.body, 'request body');
    const data = body.data === undefined || body.data === null ? null : checkData(body.data);
    const control = await store.createControl(
      { name: body.name, data, managed_by: body.managed_by ?? null, source: body.source ?? null },
      apiOrigin(ctx, request),
    );
    return reply.code(201).send(control);
  });

  app.get('/controls', { config: { access: 'read', openapi: DOCS.list } }, async (request) => {
    const query = parseOr422(ListControlsQuerySchema, request.query, 'query');
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    if (query.name !== undefined) {
      const control = await store.getControlByName(query.name);
      const controls = control ? [control] : [];
      return { controls, pagination: { limit, next_cursor: null, has_more: false, total: controls.length } };
    }
    const page = await store.listControls({ cursor: query.cursor, limit });
    return {
      controls: page.controls,
      pagination: { limit, next_cursor: page.next_cursor, has_more: page.has_more, total: page.total },
    };
  });

  // Registered before /controls/:id so the static path wins clearly in the route table.
  app.post('/controls/validate', { config: { access: 'read', openapi: DOCS.validate } }, async (request) => {
    const body = parseOr422(ControlDataEnvelopeSchema, request.body, 'request body');
    checkData(body.data);
    return { success: true };
  });

  app.get<{ Params: { control_id: string } }>('/controls/:control_id', { config: { access: 'read', openapi: DOCS.get } }, async (request) => {
    return existing(controlIdOf(request.params.control_id));
  });

  app.patch<{ Params: { control_id: string } }>('/controls/:control_id', { config: { access: 'admin', openapi: DOCS.patch } }, async (request) => {
    const id = controlIdOf(request.params.control_id);
    const patch = parseOr422(ControlPatchBodySchema, request.body, 'request body');
    await writable(id);
    const control = await store.updateControl(id, patch, apiOrigin(ctx, request));
    await invalidateAgentsOf(id);
    return control;
  });

  app.delete<{ Params: { control_id: string } }>('/controls/:control_id', { config: { access: 'admin', openapi: DOCS.delete } }, async (request) => {
    const id = controlIdOf(request.params.control_id);
    await writable(id);
    const { unlinked_agents } = await store.deleteControl(id, apiOrigin(ctx, request));
    controlSets.invalidate(unlinked_agents);
    return { deleted: true, unlinked_agents };
  });

  app.get<{ Params: { control_id: string } }>('/controls/:control_id/data', { config: { access: 'read', openapi: DOCS.getData } }, async (request) => {
    const control = await existing(controlIdOf(request.params.control_id));
    if (control.data === null) {
      throw notFound(`control ${control.control_id} ("${control.name}") has no data yet; set it with PUT /api/v1/controls/${control.control_id}/data`);
    }
    return { data: control.data };
  });

  app.put<{ Params: { control_id: string } }>('/controls/:control_id/data', { config: { access: 'admin', openapi: DOCS.putData } }, async (request) => {
    const id = controlIdOf(request.params.control_id);
    const body = parseOr422(ControlDataEnvelopeSchema, request.body, 'request body');
    const data = checkData(body.data);
    await writable(id);
    const control = await store.updateControl(id, { data }, apiOrigin(ctx, request));
    await invalidateAgentsOf(id);
    const warnings = await labelsNeverAdded(data);
    return { success: true, control_id: id, data: control.data, ...(warnings.length > 0 ? { warnings } : {}) };
  });

  /** Required session labels no stored control adds (gitops' load-rules.ts refuses the same in a directory). */
  async function labelsNeverAdded(data: ControlData): Promise<FieldIssue[]> {
    const required = data.scope?.session_labels ?? [];
    if (required.length === 0) return [];
    const all = await store.listAllControls();
    const added = new Set(all.flatMap((c) => c.data?.action.session_labels ?? []));
    // Disabled and shadow controls add none: a label only they add is never on a session.
    const marked = new Set(all.filter((c) => c.enabled && c.data?.mode !== 'shadow').flatMap((c) => c.data?.action.session_labels ?? []));
    return required.flatMap((label, index): FieldIssue[] => {
      const field = `data.scope.session_labels[${index}]`;
      if (marked.has(label)) return [];
      if (added.has(label)) {
        return [{ field, code: 'session_label_never_marked', message: `session label "${label}" is added only by controls that are disabled or in shadow mode, which add no labels: this control never applies until one adds it` }];
      }
      return [{ field, code: 'session_label_never_added', message: `no control adds session label "${label}" (action.session_labels): this control never applies until one does` }];
    });
  }
};

function prefixData(issue: FieldIssue): FieldIssue {
  const field = issue.field === '' ? 'data' : issue.field.startsWith('[') ? `data${issue.field}` : `data.${issue.field}`;
  return { ...issue, field };
}

/** The 409 for a write to a control or policy that watch mode manages: its file is where it changes. */
export function readOnly(record: { name: string; managed_by: string | null; source: string | null }, kind: 'control' | 'policy' = 'control'): HttpProblem {
  const where = record.source ? ` edit ${record.source} instead` : ' edit its file in the watched directory instead';
  return new HttpProblem(
    409,
    'read_only',
    `${kind} "${record.name}" is managed by ${record.managed_by ?? 'watch mode'} and read-only through the API;${where}`,
  );
}
