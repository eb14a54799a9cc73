import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlSetCache } from '../../src/server/control-sets.js';
import { HttpProblem } from '../../src/server/problem.js';
import type { Store } from '../../src/store/types.js';
import { names, openBotStore } from './control-set-store.js';

let store: Store;
beforeEach(async () => {
  store = await openBotStore();
});
afterEach(async () => {
  await store.close();
});

/** The real store, with the read of an agent's controls held until the test releases it. */
function gatedStore(real: Store) {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let reads = 0;
  let markRead: () => void = () => undefined;
  const readDone = new Promise<void>((resolve) => (markRead = resolve));
  const gated: Pick<Store, 'agentControlSet'> = {
    async agentControlSet(name) {
      reads++;
      const read = await real.agentControlSet(name);
      markRead();
      await gate;
      return read;
    },
  };
  return {
    gated,
    release: () => release(),
    reads: () => reads,
    readDone,
  };
}

describe('ControlSetCache', () => {
  it('builds once and shares the build between concurrent gets', async () => {
    const g = gatedStore(store);
    const cache = new ControlSetCache(g.gated, names);
    const first = cache.get('bot');
    const second = cache.get('BOT');
    g.release();
    expect(await first).toEqual(['a']);
    expect(await second).toBe(await first);
    expect(await cache.get('bot')).toBe(await first);
    expect(cache.peek('bot')).toEqual(['a']);
    expect(g.reads()).toBe(1);
  });

  it('does not keep a set whose build was invalidated while it ran', async () => {
    const g = gatedStore(store);
    const cache = new ControlSetCache(g.gated, names);
    const stale = cache.get('bot');
    // The build has read its rows; now a write lands and invalidates.
    await g.readDone;
    const b = await store.createControl({ name: 'b' });
    await store.linkControl('bot', b.control_id);
    cache.invalidate(['bot']);
    g.release();
    expect(await stale).toEqual(['a']);
    expect(cache.peek('bot')).toBeUndefined();
    expect(await cache.get('bot')).toEqual(['a', 'b']);
  });

  it('invalidate("all") also discards builds in flight', async () => {
    const g = gatedStore(store);
    const cache = new ControlSetCache(g.gated, names);
    const inFlight = cache.get('bot');
    cache.invalidate('all');
    g.release();
    await inFlight;
    expect(cache.size).toBe(0);
  });

  it('rejects an unknown agent with a 404 problem and caches nothing', async () => {
    const cache = new ControlSetCache(store, names);
    await expect(cache.get('nobody')).rejects.toSatisfy((e) => e instanceof HttpProblem && e.status === 404);
    expect(cache.size).toBe(0);
  });
});
