/**
 * The spans of guardctl's writes: `guardctl.reload` (watch mode applying its directory)
 * and `guardctl.apply` (`guardctl apply` making a server match a directory). They carry
 * counts and revisions, never control contents. PURE.
 */
import { SPAN_STATUS, type Attributes, type SpanLike } from './types.js';

export const RELOAD_SPAN = 'guardctl.reload';
export const APPLY_SPAN = 'guardctl.apply';

/** What a span-starting tracer needs to offer (tracing/start.ts Tracing has it). */
export interface SpanStarter<P> {
  startSpan(name: string, kind: number, parent: P | null): SpanLike;
}

export interface ReloadFacts {
  dir: string;
  result: 'success' | 'failure' | 'unchanged';
  /** The directory's revision (short sha256 of its files); null when it could not be read. */
  revision: string | null;
  operations: number;
  touchedAgents: number;
  errors: number;
  /** The store revision after the reload wrote, when it wrote. */
  setRevision: number | null;
}

export function endReloadSpan(span: SpanLike, facts: ReloadFacts): void {
  if (span.isRecording()) {
    const attributes: Attributes = {
      'guardctl.reload.directory': facts.dir,
      'guardctl.reload.result': facts.result,
      'guardctl.reload.operations': facts.operations,
      'guardctl.reload.agents': facts.touchedAgents,
      'guardctl.reload.errors': facts.errors,
    };
    if (facts.revision !== null) attributes['guardctl.reload.revision'] = facts.revision;
    if (facts.setRevision !== null) attributes['guardctl.set_revision'] = facts.setRevision;
    span.setAttributes(attributes);
    if (facts.result === 'failure') {
      span.setStatus({ code: SPAN_STATUS.error, message: `the directory is not valid (${facts.errors} error${facts.errors === 1 ? '' : 's'}); the last good controls stay` });
    }
  }
  span.end();
}

export interface ApplyFacts {
  /** The directory or saved plan applied. */
  target: string;
  server: string;
  /** Operations by kind (`create_control`, `link`, ...), as planned. */
  planned: Readonly<Record<string, number>>;
  done: number;
  failed: number;
  notDone: number;
}

export function endApplySpan(span: SpanLike, facts: ApplyFacts | { error: string }): void {
  if (span.isRecording()) {
    if ('error' in facts) {
      span.setAttributes({ 'guardctl.apply.result': 'error' });
      span.setStatus({ code: SPAN_STATUS.error, message: facts.error });
    } else {
      const total = Object.values(facts.planned).reduce((sum, n) => sum + n, 0);
      const attributes: Attributes = {
        'guardctl.apply.target': facts.target,
        'guardctl.apply.server': facts.server,
        'guardctl.apply.result': facts.failed > 0 ? 'failure' : 'success',
        'guardctl.apply.operations': total,
        'guardctl.apply.done': facts.done,
        'guardctl.apply.failed': facts.failed,
        'guardctl.apply.not_done': facts.notDone,
      };
      for (const [op, count] of Object.entries(facts.planned)) attributes[`guardctl.apply.planned.${op}`] = count;
      span.setAttributes(attributes);
      if (facts.failed > 0) span.setStatus({ code: SPAN_STATUS.error, message: 'an operation failed; the rest was not applied' });
    }
  }
  span.end();
}
