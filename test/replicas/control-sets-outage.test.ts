/**
 * The compiled-set cache through a store outage, on a real SQLite store whose reads can
 * be switched to fail the way an unreachable PostgreSQL fails (StoreError 'unavailable').
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlSetCache } from '../../src/server/control-sets.js';
import { StoreError, type Store } from '../../src/store/types.js';
import { names, openBotStore } from '../server/control-set-store.js';

let store: Store;
beforeEach(async () => {
  store = await openBotStore();
});
afterEach(async () => {
  await store.close();
});

function switchable(real: Store) {
  const state = { down: false, reads: 0 };
  const fail = () => {
    state.reads++;
    if (state.down) throw new StoreError('unavailable', 'database unavailable: connect ECONNREFUSED');
  };
  const wrapped: Pick<Store, 'agentControlSet'> = {
    async agentControlSet(name) {
      fail();
      return real.agentControlSet(name);
    },
  };
  return { wrapped, state };
}

describe('ControlSetCache during a store outage', () => {
  it('serves the last set after an invalidation it cannot rebuild, and retries at most once per retryMs', async () => {
    const { wrapped, state } = switchable(store);
    let now = 0;
    const cache = new ControlSetCache(wrapped, names, { retryMs: 1000, now: () => now });
    expect(await cache.get('bot')).toEqual(['a']);

    state.down = true;
    cache.invalidate('all');
    expect(cache.peek('bot')).toBeUndefined();
    expect(await cache.get('bot')).toEqual(['a']);
    expect(cache.degraded).toBe(1);
    const readsAfterFirstFailure = state.reads;

    now = 500;
    expect(await cache.get('bot')).toEqual(['a']);
    expect(state.reads).toBe(readsAfterFirstFailure); // within retryMs: no new attempt

    // The database returns and a write lands meanwhile.
    state.down = false;
    const b = await store.createControl({ name: 'b' });
    await store.linkControl('bot', b.control_id);
    now = 1000;
    expect(await cache.get('bot')).toEqual(['a']); // answered from the stale set; rebuild started
    await expect.poll(() => cache.get('bot'), { interval: 10 }).toEqual(['a', 'b']);
    expect(cache.degraded).toBe(0);
    expect(cache.size).toBe(1);
  });

  it('an invalidation (the database told us about a write) ends outage mode at once', async () => {
    const { wrapped, state } = switchable(store);
    const cache = new ControlSetCache(wrapped, names, { retryMs: 60_000 });
    await cache.get('bot');
    state.down = true;
    cache.invalidate(['bot']);
    expect(await cache.get('bot')).toEqual(['a']);
    state.down = false;
    const b = await store.createControl({ name: 'b' });
    await store.linkControl('bot', b.control_id);
    cache.invalidate(['bot']);
    expect(await cache.get('bot')).toEqual(['a', 'b']);
  });

  it('an agent with no set in memory fails with the unavailable error, and nothing is cached', async () => {
    const { wrapped, state } = switchable(store);
    const cache = new ControlSetCache(wrapped, names);
    state.down = true;
    await expect(cache.get('bot')).rejects.toSatisfy((e) => e instanceof StoreError && e.kind === 'unavailable');
    expect(cache.size).toBe(0);
    state.down = false;
    expect(await cache.get('bot')).toEqual(['a']);
  });
});
