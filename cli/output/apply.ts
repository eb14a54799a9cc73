/** Apply output: a progress display on a terminal, plain lines in CI, a result summary or JSON. */
import { STALE_REVISION, type ApplyResult, type ProgressEvent } from '../../src/gitops/apply.js';
import type { Operation } from '../../src/gitops/plan.js';
import type { Colors } from './color.js';
import { operationLine } from './plan.js';

export const APPLY_JSON_VERSION = 1;

/**
 * On a TTY one line is redrawn (`[12/340] + create control "x"`); elsewhere each finished
 * operation is one plain line, which reads well in CI logs.
 */
export function progressPrinter(stream: { write(text: string): unknown; isTTY?: boolean }, c: Colors): (e: ProgressEvent) => void {
  if (stream.isTTY) {
    return (e) => {
      if (e.status === 'start') stream.write(`\r\u001b[2K${c.dim(`[${e.index}/${e.total}]`)} ${operationLine(e.operation, c)}`);
      if (e.status === 'failed' || e.index === e.total) stream.write('\r\u001b[2K');
    };
  }
  return (e) => {
    if (e.status === 'done') stream.write(`[${e.index}/${e.total}] ${operationLine(e.operation)}\n`);
  };
}

export function renderApplyText(result: ApplyResult, c: Colors): string {
  const out: string[] = [];
  if (result.failed?.code === STALE_REVISION) {
    // Another writer won the race: nothing is wrong with the directory, the plan is just old.
    const done = result.done.length;
    out.push(c.red(`✗ apply refused: ${result.failed.error.replace(/^HTTP 409: /, '').replace(/ \(the other .*\)$/, '')}`));
    out.push(`  Another apply, a hot reload or a person wrote to the server after this plan was made; ${done === 0 ? 'this run changed nothing' : `only the ${done} operation(s) of its batches before that were applied`}.`);
    out.push(c.cyan('  hint: run "guardctl plan" again to see the server as it is now, then apply'));
  } else if (result.failed) {
    out.push(c.red(`✗ apply stopped: ${operationLine(result.failed.operation)} failed: ${result.failed.error}`));
    out.push(`  done: ${result.done.length} operation(s)`);
    for (const o of result.done) out.push(`    ${operationLine(o)}`);
    out.push(`  not done: ${result.notDone.length + 1} operation(s) (the failed one included)`);
    for (const o of [result.failed.operation, ...result.notDone]) out.push(`    ${operationLine(o)}`);
    out.push(c.cyan(`  hint: ${failureHint(result.failed)}`));
  } else if (result.done.length === 0) {
    out.push(c.green('✓ nothing to do: the server already matches the directory'));
  } else {
    out.push(c.green(`✓ applied ${result.done.length} operation(s): ${countLine(result.done)}`));
  }
  return `${out.join('\n')}\n`;
}

/** What to do next, true for the kind of failure: a re-run only helps once the cause is gone. */
function failureHint(failed: NonNullable<ApplyResult['failed']>): string {
  if (failed.status === undefined) {
    return 'the server did not answer, so the last batch may or may not have been applied: run "guardctl plan" to see the server as it is now, then apply again';
  }
  if (failed.code === 'read_only') {
    return 'a watched directory (serve --watch) keeps this control: edit it in that directory, or take it out of this one; applying again fails the same way';
  }
  return 'fix the cause named above; applying again fails the same way until then. Then run "guardctl plan" and apply: only what is still missing is done';
}

function countLine(ops: readonly Operation[]): string {
  const counts = new Map<string, number>();
  for (const o of ops) counts.set(o.op, (counts.get(o.op) ?? 0) + 1);
  return [...counts].map(([op, n]) => `${n} ${op.replace('_', ' ')}`).join(', ');
}

export function renderApplyJson(result: ApplyResult, extra: Record<string, unknown> = {}): string {
  return `${JSON.stringify(
    {
      version: APPLY_JSON_VERSION,
      converged: result.failed === null,
      ...extra,
      done: result.done,
      failed: result.failed,
      not_done: result.notDone,
    },
    null,
    2,
  )}\n`;
}
