import type { FastifyPluginAsync } from 'fastify';
import { validateControlData } from '../../engine/index.js';
import type { ControlData, ControlRecord, FieldIssue } from '../../model/index.js';
import { apiOrigin, controlIdOf, isWatchManaged, parseOr422, type ServerContext } from '../context.js';
import { HttpProblem, invalid, notFound } from '../problem.js';
import {
  ControlDataEnvelopeSchema,
  ControlPatchBodySchema,
  CreateControlEnvelopeSchema,
  DEFAULT_PAGE_SIZE,
  ListControlsQuerySchema,
} from '../schemas.js';

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

  app.put('/controls', { config: { access: 'admin' } }, async (request, reply) => {
    const body = parseOr422(CreateControlEnvelopeSchema, request.body, 'request body');
    const data = body.data === undefined || body.data === null ? null : checkData(body.data);
    const control = await store.createControl(
      { name: body.name, data, managed_by: body.managed_by ?? null, source: body.source ?? null },
      apiOrigin(ctx, request),
    );
    return reply.code(201).send(control);
  });

  app.get('/controls', { config: { access: 'read' } }, async (request) => {
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
  app.post('/controls/validate', { config: { access: 'read' } }, async (request) => {
    const body = parseOr422(ControlDataEnvelopeSchema, request.body, 'request body');
    checkData(body.data);
    return { success: true };
  });

  app.get<{ Params: { id: string } }>('/controls/:id', { config: { access: 'read' } }, async (request) => {
    return existing(controlIdOf(request.params.id));
  });

  app.patch<{ Params: { id: string } }>('/controls/:id', { config: { access: 'admin' } }, async (request) => {
    const id = controlIdOf(request.params.id);
    const patch = parseOr422(ControlPatchBodySchema, request.body, 'request body');
    await writable(id);
    const control = await store.updateControl(id, patch, apiOrigin(ctx, request));
    await invalidateAgentsOf(id);
    return control;
  });

  app.delete<{ Params: { id: string } }>('/controls/:id', { config: { access: 'admin' } }, async (request) => {
    const id = controlIdOf(request.params.id);
    await writable(id);
    const { unlinked_agents } = await store.deleteControl(id, apiOrigin(ctx, request));
    controlSets.invalidate(unlinked_agents);
    return { deleted: true, unlinked_agents };
  });

  app.get<{ Params: { id: string } }>('/controls/:id/data', { config: { access: 'read' } }, async (request) => {
    const control = await existing(controlIdOf(request.params.id));
    if (control.data === null) {
      throw notFound(`control ${control.control_id} ("${control.name}") has no data yet; set it with PUT /api/v1/controls/${control.control_id}/data`);
    }
    return { data: control.data };
  });

  app.put<{ Params: { id: string } }>('/controls/:id/data', { config: { access: 'admin' } }, async (request) => {
    const id = controlIdOf(request.params.id);
    const body = parseOr422(ControlDataEnvelopeSchema, request.body, 'request body');
    const data = checkData(body.data);
    await writable(id);
    const control = await store.updateControl(id, { data }, apiOrigin(ctx, request));
    await invalidateAgentsOf(id);
    return { success: true, control_id: id, data: control.data };
  });
};

function prefixData(issue: FieldIssue): FieldIssue {
  const field = issue.field === '' ? 'data' : issue.field.startsWith('[') ? `data${issue.field}` : `data.${issue.field}`;
  return { ...issue, field };
}

export function readOnly(control: ControlRecord): HttpProblem {
  const where = control.source ? ` edit ${control.source} instead` : ' edit its file in the watched directory instead';
  return new HttpProblem(
    409,
    'read_only',
    `control "${control.name}" is managed by ${control.managed_by ?? 'watch mode'} and read-only through the API;${where}`,
  );
}
