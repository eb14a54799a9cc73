/**
 * Long texts are searched off the event loop (search-pool.ts): the check answers with a
 * promise, finds what it would have found on the loop, and a search that runs too long is
 * stopped and fails instead of holding a thread for ever.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createDefaultRegistry, regexEvaluator } from '../../src/evaluators/index.js';
import { OFFLOAD_MIN_BYTES } from '../../src/evaluators/regex/re2.js';
import { SearchPool } from '../../src/evaluators/regex/search-pool.js';
import { TextMemo } from '../../src/evaluators/text.js';
import { regexControl, toolStep } from '../engine/helpers.js';

function randomXY(length: number): Buffer {
  const bytes = randomBytes(length);
  for (let i = 0; i < length; i++) bytes[i] = bytes[i]! & 1 ? 0x78 : 0x79;
  return bytes;
}

const pools: SearchPool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});

describe('regex searches of long texts', () => {
  it('answer with a promise, and find the same match, offsets after non-ASCII text included', async () => {
    const check = regexEvaluator.compile({ pattern: '(?i)drop\\s+table' });
    const text = `${'ä😀 '.repeat(OFFLOAD_MIN_BYTES)} DROP  TABLE users`;
    for (const memo of [new TextMemo(), undefined]) {
      const out = check(text, memo);
      expect(out).toBeInstanceOf(Promise);
      expect(await out).toMatchObject({ matched: true, found: ['DROP  TABLE'] });
    }
    expect(await check('ä'.repeat(OFFLOAD_MIN_BYTES), new TextMemo())).toMatchObject({ matched: false });
    // Short texts stay on the loop: a plain answer, no promise.
    expect(check('x DROP TABLE', new TextMemo())).not.toBeInstanceOf(Promise);
  });

  it('decide through the engine like short ones, scan groups included', async () => {
    const set = compileControls(
      [regexControl('drop', '(?i)drop\\s+table'), regexControl('truncate', '(?i)truncate'), regexControl('grant', 'GRANT ALL')],
      createDefaultRegistry(),
    );
    const long = `${'select 1; '.repeat(OFFLOAD_MIN_BYTES / 5)} truncate t`;
    for (let i = 0; i < 70; i++) await evaluateStep(set, toolStep('t', 'warm'), 'pre'); // the groups are built
    const pending = evaluateStep(set, toolStep('t', long), 'pre');
    expect(pending).toBeInstanceOf(Promise);
    const { result } = await pending;
    expect(result.matches.map((m) => m.control_name)).toEqual(['truncate']);
    expect(result.non_matches.map((m) => m.control_name)).toEqual(['drop', 'grant']);
  });

  it('stop a search that runs too long; the pool goes on with a new thread', async () => {
    const pool = new SearchPool({ size: 1, timeoutMs: 200 });
    pools.push(pool);
    // About a second of RE2's NFA (x.{190}z on random x and y): far beyond 200 ms.
    const slow = pool.search('x.{190}z', randomXY(1 << 20));
    const queued = pool.search('needle', Buffer.from(`hay ${'x'.repeat(OFFLOAD_MIN_BYTES)} needle`));
    await expect(slow).rejects.toThrow(/regex search stopped after 200 ms/);
    expect(await queued).toEqual({ at: 4 + OFFLOAD_MIN_BYTES + 1, to: 4 + OFFLOAD_MIN_BYTES + 7 });
  });

  it('report a pattern the thread cannot compile as a failure', async () => {
    const pool = new SearchPool({ size: 1 });
    pools.push(pool);
    await expect(pool.search('a(', Buffer.from('abc'))).rejects.toThrow(/regex search failed/);
  });
});
