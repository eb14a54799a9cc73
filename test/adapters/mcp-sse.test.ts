/**
 * The HTTP upstream's SSE reader: fields as the HTML standard reads them, whatever the
 * chunking, and an event over the limit skipped to its end without losing the next one.
 */
import { describe, expect, it } from 'vitest';
import { SseReader, type SseEvent } from '../../src/adapters/mcp-sse.js';

function read(chunks: (string | Buffer)[], max = 1024): { events: SseEvent[]; retries: number[]; oversize: number } {
  const events: SseEvent[] = [];
  const retries: number[] = [];
  let oversize = 0;
  const reader = new SseReader(max, { onEvent: (e) => events.push(e), onRetry: (ms) => retries.push(ms), onOversize: () => oversize++ });
  for (const chunk of chunks) reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return { events, retries, oversize };
}

/** The same bytes cut into chunks of one byte each. */
const bytewise = (text: string): Buffer[] => [...Buffer.from(text)].map((b) => Buffer.from([b]));

describe('SseReader', () => {
  const stream = '\uFEFF: a comment\nevent: message\nid: 7\ndata: {"a":\ndata:1}\n\nretry: 2500\ndata: second\r\n\r\nid: 8\n\ndata:x\rdata: y\r\r';
  const expected: SseEvent[] = [
    { event: 'message', data: '{"a":\n1}', id: '7' },
    { event: 'message', data: 'second', id: undefined },
    { event: 'message', data: '', id: '8' },
    { event: 'message', data: 'x\ny', id: undefined },
  ];

  it('reads event, id, multi-line data and retry, with LF, CRLF and CR line ends', () => {
    const { events, retries } = read([stream]);
    expect(events).toEqual(expected);
    expect(retries).toEqual([2500]);
  });

  it('reads the same events from one byte at a time (a CRLF cut between chunks is one line end)', () => {
    expect(read(bytewise(stream)).events).toEqual(expected);
  });

  it('keeps a multi-byte character cut between chunks whole', () => {
    const bytes = Buffer.from('data: café ☕\n\n');
    expect(read([bytes.subarray(0, 10), bytes.subarray(10, 14), bytes.subarray(14)]).events).toEqual([{ event: 'message', data: 'café ☕', id: undefined }]);
  });

  it('names the event type, ignores an id with NUL and a retry that is not a number, and drops an unfinished event', () => {
    const { events, retries } = read(['event: ping\ndata: p\n\n', 'id: a\0b\ndata: q\n\n', 'retry: 1s\n\n', 'data: never ended\n']);
    expect(events).toEqual([
      { event: 'ping', data: 'p', id: undefined },
      { event: 'message', data: 'q', id: undefined },
    ]);
    expect(retries).toEqual([]);
  });

  it('skips an event over the limit to its end, reports it once, and reads the next one', () => {
    const big = 'x'.repeat(300);
    const { events, oversize } = read([`data: ${big}\ndata: ${big}\n`, `data: ${big}\ndata: ${big}\n\n`, 'data: after\n\n'], 1000);
    expect(oversize).toBe(1);
    expect(events).toEqual([{ event: 'message', data: 'after', id: undefined }]);
  });

  it('skips one line over the limit fed a byte at a time', () => {
    const { events, oversize } = read(bytewise(`data: ${'y'.repeat(100)}\n\ndata: ok\n\n`), 50);
    expect(oversize).toBe(1);
    expect(events).toEqual([{ event: 'message', data: 'ok', id: undefined }]);
  });
});
