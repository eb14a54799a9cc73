/**
 * The dashboard without a terminal: one line per evaluation (or one JSON object per
 * line with `--format json`), so `guardctl tui` works in CI logs and pipes. Connection
 * changes go to stderr, so stdout holds only events.
 */
import { followEventStream, type EventStreamOptions, type StreamState } from '../../src/client/event-stream.js';
import { describeConnection, formatPlainLine } from './format.js';

export interface PlainOptions extends EventStreamOptions {
  format: 'text' | 'json';
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

/** Resolves with the final stream state once the signal aborts or the server refuses. */
export async function runPlain(options: PlainOptions): Promise<StreamState> {
  const { out, err } = options;
  let last = '';
  return followEventStream(options, {
    onEvaluation: (summary) => {
      out.write(options.format === 'json' ? `${JSON.stringify(summary)}\n` : `${formatPlainLine(summary)}\n`);
    },
    onReload: (notice) => {
      err.write(`# reload ${notice.result}${notice.revision ? ` ${notice.revision}` : ''}${notice.errors.length ? `: ${notice.errors.join('; ')}` : ''}\n`);
    },
    onLagged: (skipped) => err.write(`# lagged: the server skipped ${skipped} events\n`),
    onInvalid: (message, reason) => err.write(`# unreadable ${message.event} event: ${reason}\n`),
    onState: (state) => {
      const text = describeConnection(state, Date.now());
      // Repeated "connecting" lines during a long outage say nothing new.
      if (text !== last && state.kind !== 'closed') err.write(`# ${text}\n`);
      last = text;
    },
  });
}
