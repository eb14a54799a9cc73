/**
 * The gateway's line reader and its view of the server's tools (issue #34 item 12): lines
 * split anywhere across chunks, a line over the limit skipped to its end without ending
 * the stream, and the declared tool names read page by page and again after a change.
 */
import { describe, expect, it } from 'vitest';
import { LineReader } from '../../src/adapters/mcp-stdio.js';
import { UpstreamTools } from '../../src/adapters/mcp-tools.js';

function reader(max: number): { r: LineReader; lines: string[]; oversize: () => number } {
  const lines: string[] = [];
  let n = 0;
  return { r: new LineReader(max, (l) => lines.push(l), () => n++), lines, oversize: () => n };
}

describe('LineReader', () => {
  it('joins a line split across chunks, at any byte, and strips a CR before the newline', () => {
    const text = Buffer.from('{"a":"é"}\r\n{"b":2}\n');
    for (let cut = 0; cut <= text.length; cut++) {
      const { r, lines } = reader(100);
      r.push(text.subarray(0, cut));
      r.push(text.subarray(cut));
      expect(lines).toEqual(['{"a":"é"}', '{"b":2}']);
    }
  });

  it('reads several whole lines of one chunk as they are, the empty one and multi-byte text included', () => {
    const { r, lines, oversize } = reader(12);
    r.push(Buffer.from('{"a":"é"}\r\n\n{"b":"☕"}\n{"c":'));
    r.push(Buffer.from('3}\n'));
    expect(lines).toEqual(['{"a":"é"}', '', '{"b":"☕"}', '{"c":3}']);
    expect(oversize()).toBe(0);
  });

  it('skips a line over the limit to its end, reports it once, and reads the next line', () => {
    const { r, lines, oversize } = reader(10);
    r.push(Buffer.from('0123456'));
    r.push(Buffer.from('789abcdef'));
    r.push(Buffer.from('ghij'));
    r.push(Buffer.from('klm\nok\n'));
    expect(lines).toEqual(['ok']);
    expect(oversize()).toBe(1);
  });

  it('takes a line of exactly the limit, and refuses one byte more', () => {
    const { r, lines, oversize } = reader(4);
    r.push(Buffer.from('abcd\nabcde\nx\n'));
    expect(lines).toEqual(['abcd', 'x']);
    expect(oversize()).toBe(1);
  });

  it('reads a line over the limit arriving in one chunk with the next line', () => {
    const { r, lines, oversize } = reader(4);
    r.push(Buffer.from(`${'z'.repeat(50)}\n{"id":1}`));
    r.push(Buffer.from('\n'));
    // The second line (8 bytes) is over this limit too: two lines skipped, each reported.
    expect(lines).toEqual([]);
    expect(oversize()).toBe(2);
    const wide = reader(8);
    wide.r.push(Buffer.from(`${'z'.repeat(50)}\n{"id":1}\n`));
    expect(wide.lines).toEqual(['{"id":1}']);
  });
});

describe('UpstreamTools', () => {
  it('reads every page of tools/list once, and again after invalidate', async () => {
    const pages: Record<string, { tools: unknown[]; nextCursor?: string }> = {
      first: { tools: [{ name: 'run_sql' }, { name: 'deploy' }], nextCursor: 'p2' },
      p2: { tools: [{ name: 'RUN_SQL' }, { nope: true }] },
    };
    const asked: Array<string | undefined> = [];
    const tools = new UpstreamTools(async (cursor) => {
      asked.push(cursor);
      return pages[cursor ?? 'first']!;
    });
    expect([...(await tools.names())].sort()).toEqual(['RUN_SQL', 'deploy', 'run_sql']);
    await tools.names();
    expect(asked).toEqual([undefined, 'p2']);
    pages.first = { tools: [{ name: 'export' }] };
    tools.invalidate();
    expect([...(await tools.names())]).toEqual(['export']);
    expect(asked).toEqual([undefined, 'p2', undefined]);
  });

  it('shares one read among concurrent calls, and rejects (then retries) when the server fails', async () => {
    let reads = 0;
    let fail = true;
    const tools = new UpstreamTools(async () => {
      reads++;
      if (fail) throw new Error('tools/list: Method not found');
      return { tools: [{ name: 'a' }] };
    });
    await expect(Promise.all([tools.names(), tools.names()])).rejects.toThrow('Method not found');
    expect(reads).toBe(1);
    fail = false;
    expect([...(await tools.names())]).toEqual(['a']);
  });

  it('refuses an answer without a list of tools', async () => {
    const tools = new UpstreamTools(async () => ({ tools: 'run_sql' }));
    await expect(tools.names()).rejects.toThrow('without a list of tools');
  });
});
