import type { FastifyPluginAsync } from 'fastify';
import { validateControlData } from '../../engine/index.js';
import type { EvaluatorRegistry } from '../../evaluators/registry.js';
import type { ControlData, ControlRecord, FieldIssue } from '../../model/index.js';
import { StoreError, type Store, type StoreChange } from '../../store/types.js';
import { apiOrigin, isWatchManaged, parseOr422, type ServerContext } from '../context.js';
import { HttpProblem, invalid } from '../problem.js';
import { ChangesEnvelopeSchema, type ChangesEnvelope } from '../schemas.js';
import { readOnly } from './controls.js';

type ChangeBody = ChangesEnvelope['changes'][number];

/**
 * Above this many distinct control names one full read beats a lookup per name (on
 * PostgreSQL each lookup is a round trip).
 */
const LOOKUPS_BEFORE_FULL_READ = 16;

/**
 * `POST /changes`: many writes in one store transaction, all of them or none. GitOps
 * apply sends its plan through it in batches instead of one request per operation.
 */
export const changeRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const { store, registry, controlSets } = ctx;

  app.post('/changes', { config: { access: 'admin' } }, async (request) => {
    const body = parseOr422(ChangesEnvelopeSchema, request.body, 'request body');
    const changes = storeChangesOf(body.changes, registry);
    await refuseWatched(store, changes);
    let touched: string[];
    try {
      // This endpoint is how GitOps apply writes (docs/gitops.md): its writes are `apply` in history.
      ({ touched_agents: touched } = await store.applyChanges(changes, apiOrigin(ctx, request, 'apply')));
    } catch (error) {
      throw error instanceof StoreError ? problemNamingChange(error) : error;
    }
    controlSets.invalidate(touched);
    return { applied: changes.length, touched_agents: touched };
  });
};

/**
 * Checks every control's data with the engine's one validation implementation; all
 * issues of all changes come back together, each under its change's path.
 */
function storeChangesOf(bodies: ChangeBody[], registry: EvaluatorRegistry): StoreChange[] {
  const issues: FieldIssue[] = [];
  const checkData = (data: unknown, path: string): ControlData | null | undefined => {
    if (data === undefined || data === null) return data;
    const outcome = validateControlData(data, registry);
    if (outcome.ok) return outcome.data;
    issues.push(...outcome.issues.map((issue) => prefixed(issue, path)));
    return undefined;
  };
  const changes = bodies.map((change, i): StoreChange => {
    switch (change.op) {
      case 'create_control': {
        const data = checkData(change.control.data, `changes[${i}].control.data`);
        return { op: 'create_control', control: { ...change.control, data: data ?? null } };
      }
      case 'update_control': {
        const { data: raw, ...rest } = change.patch;
        const data = checkData(raw, `changes[${i}].patch.data`);
        return { op: 'update_control', name: change.name, patch: data === undefined ? rest : { ...rest, data } };
      }
      case 'upsert_agent':
        return { op: 'upsert_agent', agent: change.agent };
      case 'delete_control':
      case 'link':
      case 'unlink':
        return change;
    }
  });
  if (issues.length > 0) throw invalid('the request body is not valid', issues);
  return changes;
}

function prefixed(issue: FieldIssue, path: string): FieldIssue {
  const field = issue.field === '' ? path : issue.field.startsWith('[') ? `${path}${issue.field}` : `${path}.${issue.field}`;
  return { ...issue, field };
}

function controlNameOf(change: StoreChange): string | null {
  switch (change.op) {
    case 'create_control':
      return change.control.name;
    case 'update_control':
    case 'delete_control':
      return change.name;
    case 'link':
    case 'unlink':
      return change.control_name;
    case 'upsert_agent':
      return null;
  }
}

/** Watched controls are edited in their files: a batch naming one is refused whole. */
async function refuseWatched(store: Store, changes: StoreChange[]): Promise<void> {
  const names = new Set(changes.map(controlNameOf).filter((n): n is string => n !== null));
  if (names.size === 0) return;
  let controls: ControlRecord[];
  if (names.size <= LOOKUPS_BEFORE_FULL_READ) {
    const found = await Promise.all([...names].map((name) => store.getControlByName(name)));
    controls = found.filter((c): c is ControlRecord => c !== null);
  } else {
    controls = (await store.listAllControls()).filter((c) => names.has(c.name));
  }
  const watched = controls.find((c) => isWatchManaged(c.managed_by));
  if (!watched) return;
  const index = changes.findIndex((c) => controlNameOf(c) === watched.name);
  const problem = readOnly(watched);
  throw new HttpProblem(problem.status, problem.errorCode, `change ${index + 1}: ${problem.detail}`, [
    { field: `changes[${index}]`, code: 'read_only', message: problem.detail },
  ]);
}

/** The store says "change N (...)" in its message; the problem also names it as a field path. */
function problemNamingChange(error: StoreError): Error {
  const match = /^change (\d+) \(.*?\): /.exec(error.message);
  if (!match || error.kind === 'unavailable') return error;
  const status = error.kind === 'conflict' ? 409 : 404;
  const code = error.kind === 'conflict' ? 'conflict' : 'not_found';
  return new HttpProblem(status, code, error.message, [
    { field: `changes[${Number(match[1]) - 1}]`, code, message: error.message.slice(match[0].length) },
  ]);
}
