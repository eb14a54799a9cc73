/**
 * What a crash can lose (issue #34, low): events wait in memory until a flush. A deny (an
 * enforced match whose action is deny) is written within DENY_FLUSH_MS of being recorded,
 * without waiting for the flush interval or a full buffer; other events wait as before.
 */
import { describe, expect, it } from 'vitest';
import type { ObservabilityEvent } from '../../src/model/index.js';
import { DENY_FLUSH_MS, EventBuffer, isUrgentEvent } from '../../src/observability/event-buffer.js';
import { makeEvent } from './fixtures.js';

function collector() {
  const written: ObservabilityEvent[] = [];
  return { written, write: async (batch: ObservabilityEvent[]) => void written.push(...batch) };
}

describe('deny events are written promptly', () => {
  it('a deny match is written without an explicit flush; a non-match and a warn wait', async () => {
    const sink = collector();
    const buffer = new EventBuffer({ capacity: 10_000, flushThreshold: 10_000, write: sink.write, urgent: isUrgentEvent });
    buffer.push([makeEvent(1, { matched: false }), makeEvent(3, { action: 'warn', matched: true })]);
    await new Promise((r) => setTimeout(r, 3 * DENY_FLUSH_MS));
    expect(sink.written).toEqual([]);
    buffer.push([makeEvent(2, { matched: true, action: 'deny' })]);
    await expect.poll(() => sink.written.map((e) => e.control_execution_id).sort()).toEqual(['exec-1', 'exec-2', 'exec-3']);
  });

  it.each([
    ['a shadow deny', { matched: true, action: 'deny', mode: 'shadow' }, false],
    ['a deny non-match', { matched: false, action: 'deny' }, false],
    ['an enforced deny match', { matched: true, action: 'deny', mode: 'enforce' }, true],
    ['a deny match of a client without modes', { matched: true, action: 'deny' }, true],
    ['a steer match', { matched: true, action: 'steer' }, false],
  ] as const)('%s is urgent: %s', (_what, overrides, urgent) => {
    expect(isUrgentEvent(makeEvent(0, overrides as Partial<ObservabilityEvent>))).toBe(urgent);
  });
});
