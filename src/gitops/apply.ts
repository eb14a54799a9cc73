/**
 * Executes a plan through a Target, in the plan's (safe) order: controls before links,
 * unlinks before deletes. Stops at the first failure and says what was done and what was
 * not; every operation is idempotent on its own, so re-planning and re-applying converges.
 */
import { ApiError } from '../errors.js';
import { errorMessage } from './errors.js';
import type { Operation } from './plan.js';
import { sortOperations } from './plan.js';

type Op<K extends Operation['op']> = Extract<Operation, { op: K }>;

/** Where a plan is applied: the server over HTTP, or (later) a store in one transaction. */
export interface Target {
  createControl(op: Op<'create_control'>): Promise<void>;
  updateControl(op: Op<'update_control'>): Promise<void>;
  deleteControl(op: Op<'delete_control'>): Promise<void>;
  upsertAgent(op: Op<'create_agent'> | Op<'update_agent'>): Promise<void>;
  link(op: Op<'link'>): Promise<void>;
  unlink(op: Op<'unlink'>): Promise<void>;
  /** The fingerprint of the target's current state (to check a saved plan is still current). */
  fingerprint(): Promise<string>;
}

export interface ProgressEvent {
  /** 1-based position of the operation. */
  index: number;
  total: number;
  operation: Operation;
  status: 'start' | 'done' | 'failed';
}

export interface ApplyResult {
  done: Operation[];
  /** `status` is the HTTP status when the server refused (for example 403: not an admin key). */
  failed: { operation: Operation; error: string; status?: number } | null;
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

export async function applyOperations(
  operations: readonly Operation[],
  target: Target,
  options: ApplyOptions | ((event: ProgressEvent) => void) = {},
): Promise<ApplyResult> {
  const { onProgress = () => {}, concurrency = 1 } = typeof options === 'function' ? { onProgress: options } : options;
  const ordered = sortOperations(operations);
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
  }
}
