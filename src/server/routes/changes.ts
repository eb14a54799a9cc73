import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { validateControlData } from '../../engine/index.js';
import type { EvaluatorRegistry } from '../../evaluators/registry.js';
import { controlNameOf, fieldIssuesOf, policyNameOf, type ControlData, type ControlRecord, type FieldIssue, type PolicyRecord } from '../../model/index.js';
import { StoreError, type AppliedBatch, type Store, type StoreChange } from '../../store/types.js';
import { apiOrigin, isWatchManaged, type ServerContext } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { HttpProblem } from '../problem.js';
import { ChangesBodySchema, ChangesEnvelopeSchema, type ChangesEnvelope } from '../schemas.js';
import { readOnly } from './controls.js';
import { pinnedToolIssues } from './mcp-servers.js';
import { PolicyWarningsSchema, policyWarnings } from './policies.js';

type ChangeBody = ChangesEnvelope['changes'][number];

/**
 * Above this many distinct control names one full read beats a lookup per name (on
 * PostgreSQL each lookup is a round trip).
 */
const LOOKUPS_BEFORE_FULL_READ = 16;

const DOC = {
  operationId: 'applyChanges',
  summary: 'Apply 1 to 500 changes (controls, agents, links, policies) in one transaction, all or none',
  description: 'A refused batch writes nothing; its problem names the failing change as change_index and in errors[].',
  tag: 'changes',
  body: ChangesBodySchema,
  responses: {
    200: z.strictObject({
      applied: z.number().int().describe('Changes applied'),
      touched_agents: z.array(z.string()).describe('Agents whose controls changed'),
      revision: z.number().int().describe('The store revision after the batch: the expected_revision of a next batch'),
      warnings: PolicyWarningsSchema.describe(
        'For each policy the batch wrote that guards nobody now, field changes[i].policy.agents or changes[i].policy.controls: ' +
          'selects_nothing (no registered agent matches its selector) or binds_only_disabled (every control it binds is disabled)',
      ),
    }),
  },
  errors: [404, 409],
} satisfies OperationDoc;

const REVISION_DOC = {
  operationId: 'getRevision',
  summary: 'The store revision: it grows with every write to controls, agents or links',
  description: 'GitOps apply reads it around reading the state it plans against and sends it as expected_revision.',
  tag: 'changes',
  responses: { 200: z.strictObject({ revision: z.number().int().nonnegative() }) },
  errors: [],
} satisfies OperationDoc;

/**
 * `POST /changes`: many writes in one store transaction, all of them or none. GitOps
 * apply sends its plan through it in batches instead of one request per operation.
 */
export const changeRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const { store, registry, controlSets } = ctx;

  app.get('/changes/revision', { config: { access: 'read', openapi: REVISION_DOC } }, async () => ({ revision: await store.revision() }));

  app.post('/changes', { config: { access: 'admin', openapi: DOC } }, async (request) => {
    const parsed = ChangesEnvelopeSchema.safeParse(request.body);
    if (!parsed.success) {
      throw invalidChanges(fieldIssuesOf(parsed.error), parsed.error.issues.map((issue) => changeIndexOf(issue.path)));
    }
    const changes = storeChangesOf(parsed.data.changes, registry);
    await refuseWatched(store, changes);
    let applied: AppliedBatch;
    try {
      // This endpoint is how GitOps apply writes (docs/gitops.md): its writes are `apply` in history.
      applied = await store.applyChanges(changes, apiOrigin(ctx, request, 'apply'), { expectedRevision: parsed.data.expected_revision });
    } catch (error) {
      throw error instanceof StoreError ? problemNamingChange(error) : error;
    }
    controlSets.invalidate(applied.touched_agents);
    const warnings = await writtenPolicyWarnings(store, changes);
    return { applied: changes.length, touched_agents: applied.touched_agents, revision: applied.revision, ...(warnings.length > 0 ? { warnings } : {}) };
  });
};

/**
 * Checks every control's data with the engine's one validation implementation; all
 * issues of all changes come back together, each under its change's path.
 */
function storeChangesOf(bodies: ChangeBody[], registry: EvaluatorRegistry): StoreChange[] {
  const issues: FieldIssue[] = [];
  const failing: number[] = [];
  const checkData = (data: unknown, index: number, path: string): ControlData | null | undefined => {
    if (data === undefined || data === null) return data;
    const outcome = validateControlData(data, registry);
    if (outcome.ok) return outcome.data;
    issues.push(...outcome.issues.map((issue) => prefixed(issue, `changes[${index}].${path}`)));
    failing.push(index);
    return undefined;
  };
  const changes = bodies.map((change, i): StoreChange => {
    switch (change.op) {
      case 'create_control': {
        const data = checkData(change.control.data, i, 'control.data');
        return { op: 'create_control', control: { ...change.control, data: data ?? null } };
      }
      case 'update_control': {
        const { data: raw, ...rest } = change.patch;
        const data = checkData(raw, i, 'patch.data');
        return { op: 'update_control', name: change.name, patch: data === undefined ? rest : { ...rest, data } };
      }
      case 'upsert_agent':
        return { op: 'upsert_agent', agent: change.agent };
      case 'upsert_mcp_server': {
        const found = pinnedToolIssues(change.mcp_server.tools, `changes[${i}].mcp_server.`);
        if (found.length > 0) failing.push(i);
        issues.push(...found);
        return change;
      }
      case 'delete_control':
      case 'link':
      case 'unlink':
      case 'upsert_policy':
      case 'delete_policy':
      case 'delete_mcp_server':
        return change;
    }
  });
  if (issues.length > 0) throw invalidChanges(issues, failing);
  return changes;
}

/**
 * The warnings `PUT /policies` gives, for every policy the committed batch wrote: a batch
 * is how GitOps apply writes policies, and a selector that matches nobody is as silent there.
 */
async function writtenPolicyWarnings(store: Store, changes: readonly StoreChange[]): Promise<FieldIssue[]> {
  const warnings: FieldIssue[] = [];
  for (const [i, change] of changes.entries()) {
    if (change.op !== 'upsert_policy') continue;
    const saved = await store.getPolicyByName(change.policy.name);
    if (!saved) continue;
    const controls = await Promise.all(saved.controls.map((name) => store.getControlByName(name)));
    const enabled = controls.map((control) => control?.enabled === true);
    warnings.push(...policyWarnings(saved.name, await store.policyMembers(saved.policy_id), enabled, `changes[${i}].policy.`));
  }
  return warnings;
}

/** A 422 naming every invalid field; `change_index` is the first change with one. */
function invalidChanges(issues: FieldIssue[], changeIndexes: ReadonlyArray<number | null>): HttpProblem {
  const first = changeIndexes.find((index) => index !== null);
  return new HttpProblem(422, 'validation_failed', 'the request body is not valid', issues, first === undefined ? undefined : { change_index: first });
}

/** The change a zod issue path points into (`changes`, N, ...), or null for the envelope itself. */
function changeIndexOf(path: readonly PropertyKey[]): number | null {
  return path[0] === 'changes' && typeof path[1] === 'number' ? path[1] : null;
}

function prefixed(issue: FieldIssue, path: string): FieldIssue {
  const field = issue.field === '' ? path : issue.field.startsWith('[') ? `${path}${issue.field}` : `${path}.${issue.field}`;
  return { ...issue, field };
}

/** Watched controls and policies are edited in their files: a batch naming one is refused whole. */
async function refuseWatched(store: Store, changes: StoreChange[]): Promise<void> {
  const watched = (await watchedControl(store, changes)) ?? (await watchedPolicy(store, changes));
  if (!watched) return;
  const problem = readOnly(watched.record, watched.kind);
  throw new HttpProblem(
    problem.status,
    problem.errorCode,
    `change ${watched.index + 1}: ${problem.detail}`,
    [{ field: `changes[${watched.index}]`, code: 'read_only', message: problem.detail }],
    { change_index: watched.index },
  );
}

interface WatchedTarget {
  kind: 'control' | 'policy';
  record: ControlRecord | PolicyRecord;
  index: number;
}

async function watchedControl(store: Store, changes: StoreChange[]): Promise<WatchedTarget | null> {
  const names = new Set(changes.map(controlNameOf).filter((n): n is string => n !== null));
  if (names.size === 0) return null;
  let controls: ControlRecord[];
  if (names.size <= LOOKUPS_BEFORE_FULL_READ) {
    const found = await Promise.all([...names].map((name) => store.getControlByName(name)));
    controls = found.filter((c): c is ControlRecord => c !== null);
  } else {
    controls = (await store.listAllControls()).filter((c) => names.has(c.name));
  }
  const watched = controls.find((c) => isWatchManaged(c.managed_by));
  return watched ? { kind: 'control', record: watched, index: changes.findIndex((c) => controlNameOf(c) === watched.name) } : null;
}

async function watchedPolicy(store: Store, changes: StoreChange[]): Promise<WatchedTarget | null> {
  const names = [...new Set(changes.map(policyNameOf).filter((n): n is string => n !== null))];
  const found = await Promise.all(names.map((name) => store.getPolicyByName(name)));
  const watched = found.find((p): p is PolicyRecord => p !== null && isWatchManaged(p.managed_by));
  return watched ? { kind: 'policy', record: watched, index: changes.findIndex((c) => policyNameOf(c) === watched.name) } : null;
}

/** A change the store refused: the problem names it by its index, as a field path and as `change_index`. */
function problemNamingChange(error: StoreError): Error {
  const failed = error.failedChange;
  if (!failed || error.kind === 'unavailable' || error.kind === 'stale') return error;
  const status = error.kind === 'conflict' ? 409 : 404;
  const code = error.kind === 'conflict' ? 'conflict' : 'not_found';
  // A refusal with its own reason (bound_by_policy, ...) keeps it; the field is the change.
  const reason = error.issues?.[0]?.code ?? code;
  return new HttpProblem(status, code, error.message, [{ field: `changes[${failed.index}]`, code: reason, message: failed.reason }], {
    change_index: failed.index,
  });
}
