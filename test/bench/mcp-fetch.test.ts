/**
 * The benchmark MCP client's fetch: each request gets a signal of its own that follows the
 * transport's, so the transport's signal holds one listener however many requests a
 * session makes, and closing the transport still aborts every request in flight.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { fetchWithOwnSignals } from '../../bench/mcp-fetch.js';

/** A fetch that answers at once and records the signal each request was given. */
function answering(): { base: typeof fetch; signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  const base: typeof fetch = (_input, init) => {
    signals.push(init!.signal!);
    return Promise.resolve(new Response('ok'));
  };
  return { base, signals };
}

/** A fetch that never answers: it settles only when its signal aborts, with the signal's reason. */
const hanging: typeof fetch = (_input, init) =>
  new Promise((_resolve, reject) => {
    const signal = init!.signal!;
    if (signal.aborted) reject(signal.reason as Error);
    signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });

describe('fetchWithOwnSignals', () => {
  it('keeps one listener on the shared signal over 5,000 requests, and prints no warning', async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const { base, signals } = answering();
      const wrapped = fetchWithOwnSignals(base);
      const shared = new AbortController().signal;
      for (let i = 0; i < 5000; i++) await wrapped('http://127.0.0.1:9/mcp', { method: 'POST', signal: shared });
      expect(getEventListeners(shared, 'abort')).toHaveLength(1);
      // Each request had a signal of its own, never the shared one.
      expect(new Set(signals).size).toBe(5000);
      expect(signals).not.toContain(shared);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('aborts every request in flight when the shared signal aborts, with its reason', async () => {
    const wrapped = fetchWithOwnSignals(hanging);
    const controller = new AbortController();
    const inFlight = [1, 2, 3].map(() => wrapped('http://127.0.0.1:9/mcp', { method: 'GET', signal: controller.signal }));
    const reason = new Error('transport closed');
    controller.abort(reason);
    for (const request of inFlight) await expect(request).rejects.toBe(reason);
  });

  it('aborts at once a request started after the shared signal aborted', async () => {
    const wrapped = fetchWithOwnSignals(hanging);
    const controller = new AbortController();
    const reason = new Error('closed before');
    controller.abort(reason);
    await expect(wrapped('http://127.0.0.1:9/mcp', { signal: controller.signal })).rejects.toBe(reason);
  });

  it('passes a request without a signal on as it is', async () => {
    const { base, signals } = answering();
    const calls: (RequestInit | undefined)[] = [];
    const wrapped = fetchWithOwnSignals((input, init) => {
      calls.push(init);
      return base(input, { ...init, signal: new AbortController().signal });
    });
    const init = { method: 'DELETE' };
    await wrapped('http://127.0.0.1:9/mcp', init);
    expect(calls[0]).toBe(init);
    expect(signals).toHaveLength(1);
  });
});
