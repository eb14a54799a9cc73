/**
 * Executes a plan's operations through a Target, in the order the plan gives them (its
 * safe order: controls before links, links before unlinks, unlinks before deletes). Stops
 * at the first failure and says what was done and what was not; every operation is
 * idempotent on its own, so re-planning and re-applying converges. A Target that can
 * apply many operations at once (all or none) gets them in batches cut from the plan in
 * its order, across steps of the order, so a plan that fits one batch is one transaction;
 * a failed batch is not done as a whole.
 */
import { ApiError } from '../errors.js';
import { errorMessage } from './errors.js';
import type { McpServerOperation, Operation, PolicyOperation } from './plan.js';

type Op<K extends Operation['op']> = Extract<Operation, { op: K }>;

/** Where a plan is applied: the server over HTTP, or (later) a store in one transaction. */
export interface Target {
  createControl(op: Op<'create_control'>): Promise<void>;
  updateControl(op: Op<'update_control'>): Promise<void>;
  deleteControl(op: Op<'delete_control'>): Promise<void>;
  upsertAgent(op: Op<'create_agent'> | Op<'update_agent'>): Promise<void>;
  link(op: Op<'link'>): Promise<void>;
  unlink(op: Op<'unlink'>): Promise<void>;
  /** Creates, replaces or deletes a policy; a target without it cannot apply plans that hold policies. */
  policy?(op: PolicyOperation): Promise<void>;
  /** Pins, re-pins or unpins an MCP server; a target without it cannot apply plans that hold them. */
  mcpServer?(op: McpServerOperation): Promise<void>;
  /** The fingerprint of the target's current state (to check a saved plan is still current). */
  fingerprint(): Promise<string>;
}

/**
 * A Target that can also apply operations of one step of the safe order at once, all of
 * them or none (one transaction). Apply then uses `applyBatch` instead of the methods
 * above. (A separate interface, so code that maps over Target's methods stays simple.)
 */
export interface BatchTarget extends Target {
  /** Throws on failure, a BatchFailure when it can name the operation that caused it. */
  applyBatch(operations: readonly Operation[]): Promise<void>;
  /** How to split operations (in plan order) into batches, in order. Default: DEFAULT_BATCH_SIZE at a time. */
  batchesOf?(operations: readonly Operation[]): Operation[][];
}

export function isBatchTarget(target: Target): target is BatchTarget {
  return typeof (target as Partial<BatchTarget>).applyBatch === 'function';
}

/** Operations per batch when the Target does not say (kept well under request size limits). */
export const DEFAULT_BATCH_SIZE = 250;

/** A batch was refused because of one of its operations; the whole batch was rolled back. */
export class BatchFailure extends Error {
  constructor(
    /** The operation the target blames, when it could tell. */
    readonly operation: Operation | null,
    readonly reason: unknown,
  ) {
    super(errorMessage(reason));
    this.name = 'BatchFailure';
  }
}

export interface ProgressEvent {
  /** 1-based position of the operation. */
  index: number;
  total: number;
  operation: Operation;
  status: 'start' | 'done' | 'failed';
}

/** The server's `error_code` when a batch was refused because its plan is stale. */
export const STALE_REVISION = 'stale_revision';

export interface ApplyResult {
  done: Operation[];
  /**
   * `status` is the HTTP status when the server refused (for example 403: not an admin
   * key), `code` its `error_code` (STALE_REVISION: someone wrote since the plan was made).
   */
  failed: { operation: Operation; error: string; status?: number; code?: string } | null;
  notDone: Operation[];
}

export interface ApplyOptions {
  onProgress?: (event: ProgressEvent) => void;
  /**
   * Operations of one kind run this many at a time (creates do not depend on each other,
   * links neither); kinds still run one after the other in the safe order. Default 1.
   */
  concurrency?: number;
}

/** Runs `ordered` (a plan's operations, in the plan's order) and reports what was and was not done. */
export async function applyOperations(
  ordered: readonly Operation[],
  target: Target,
  options: ApplyOptions | ((event: ProgressEvent) => void) = {},
): Promise<ApplyResult> {
  const { onProgress = () => {}, concurrency = 1 } = typeof options === 'function' ? { onProgress: options } : options;
  if (isBatchTarget(target)) return applyInBatches(ordered, target, onProgress);
  const doneSet = new Set<number>();
  let failed: ApplyResult['failed'] = null;
  let finished = 0;
  for (const phase of phasesOf(ordered)) {
    let next = 0;
    const worker = async () => {
      while (failed === null && next < phase.length) {
        const i = phase[next++]!;
        const operation = ordered[i]!;
        onProgress({ index: finished + 1, total: ordered.length, operation, status: 'start' });
        try {
          await run(target, operation);
        } catch (error) {
          if (failed === null) {
            const status = error instanceof ApiError ? error.status : undefined;
            failed = { operation, error: errorMessage(error), ...(status ? { status } : {}) };
            onProgress({ index: finished + 1, total: ordered.length, operation, status: 'failed' });
          }
          return;
        }
        doneSet.add(i);
        finished++;
        onProgress({ index: finished, total: ordered.length, operation, status: 'done' });
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, phase.length)) }, worker));
    if (failed !== null) break;
  }
  const done = ordered.filter((_, i) => doneSet.has(i));
  const failedOp = (failed as ApplyResult['failed'])?.operation;
  const notDone = ordered.filter((o, i) => !doneSet.has(i) && o !== failedOp);
  return { done, failed, notDone };
}

/**
 * One batch at a time, in order: when a batch commits, all its operations are done; when
 * it fails, it and everything after it are not done (the target rolled the batch back).
 */
async function applyInBatches(
  ordered: readonly Operation[],
  target: BatchTarget,
  onProgress: (event: ProgressEvent) => void,
): Promise<ApplyResult> {
  const total = ordered.length;
  let finished = 0;
  // Any cut of the plan's order is safe, so batches need not end where a step of it ends.
  const batches = target.batchesOf ? target.batchesOf(ordered) : chunksOf(ordered, DEFAULT_BATCH_SIZE);
  for (const batch of batches) {
    batch.forEach((operation, k) => onProgress({ index: finished + k + 1, total, operation, status: 'start' }));
    try {
      await target.applyBatch(batch);
    } catch (error) {
      const blamed = error instanceof BatchFailure && error.operation && batch.includes(error.operation) ? error.operation : batch[0]!;
      const cause = error instanceof BatchFailure ? error.reason : error;
      const status = cause instanceof ApiError ? cause.status : undefined;
      const code = cause instanceof ApiError ? cause.problem?.error_code : undefined;
      const others = batch.length - 1;
      // A refusal from the server rolled the batch back; without an answer (timeout,
      // connection lost) the batch may or may not have committed: a new plan tells.
      const rolledBack =
        others === 0 ? '' : cause instanceof ApiError
          ? ` (the other ${others} operation(s) of its batch were rolled back with it)`
          : ` (the batch of ${others + 1} operation(s) may or may not have been applied; plan again to see)`;
      onProgress({ index: finished + batch.indexOf(blamed) + 1, total, operation: blamed, status: 'failed' });
      const failed = { operation: blamed, error: `${errorMessage(cause)}${rolledBack}`, ...(status ? { status } : {}), ...(code ? { code } : {}) };
      return { done: ordered.slice(0, finished), failed, notDone: ordered.slice(finished).filter((o) => o !== blamed) };
    }
    for (const operation of batch) onProgress({ index: ++finished, total, operation, status: 'done' });
  }
  return { done: [...ordered], failed: null, notDone: [] };
}

export function chunksOf<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

/** Indexes of consecutive operations that may run together (same step of the safe order). */
function phasesOf(ordered: readonly Operation[]): number[][] {
  const step = (o: Operation) => (o.op === 'create_agent' || o.op === 'update_agent' ? 'agent' : o.op);
  const phases: number[][] = [];
  ordered.forEach((o, i) => {
    const last = phases[phases.length - 1];
    if (last && step(ordered[last[0]!]!) === step(o)) last.push(i);
    else phases.push([i]);
  });
  return phases;
}

async function run(target: Target, operation: Operation): Promise<void> {
  switch (operation.op) {
    case 'create_control':
      return target.createControl(operation);
    case 'update_control':
      return target.updateControl(operation);
    case 'delete_control':
      return target.deleteControl(operation);
    case 'create_agent':
    case 'update_agent':
      return target.upsertAgent(operation);
    case 'link':
      return target.link(operation);
    case 'unlink':
      return target.unlink(operation);
    case 'create_policy':
    case 'update_policy':
    case 'delete_policy':
      if (!target.policy) throw new Error(`this target cannot apply policies (${operation.op} "${operation.name}")`);
      return target.policy(operation);
    case 'create_mcp_server':
    case 'update_mcp_server':
    case 'delete_mcp_server':
      if (!target.mcpServer) throw new Error(`this target cannot apply MCP servers (${operation.op} "${operation.name}")`);
      return target.mcpServer(operation);
  }
}
