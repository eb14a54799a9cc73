import { afterEach, describe, expect, it } from 'vitest';
import { startReplicaSync, type ReplicaSync } from '../../src/server/replica-sync.js';
import type { ChangeInfo } from '../../src/store/types.js';

// The fallback's rule, driven directly: a revision counter and a notification channel
// (PostgreSQL's real LISTEN/NOTIFY and revision are covered in test/replicas).
let sync: ReplicaSync | undefined;
afterEach(() => sync?.stop());

async function startWith() {
  const state = { revision: 1 };
  let listener: ((info: ChangeInfo) => void) | undefined;
  const invalidated: Array<readonly string[] | 'all'> = [];
  sync = startReplicaSync(
    { revision: async () => state.revision, onChange: (l) => ((listener = l), () => undefined) },
    { invalidate: (agents) => void invalidated.push(agents) },
    { intervalMs: 20 },
  );
  await sync.ready;
  return { state, invalidated, notify: (agents: string[]) => listener!({ agents }) };
}

const checksPass = () => new Promise((resolve) => setTimeout(resolve, 150));

describe('replica sync fallback', () => {
  it('invalidates everything when the revision moved without a notification', async () => {
    const { state, invalidated } = await startWith();
    state.revision += 1;
    await expect.poll(() => invalidated, { timeout: 2000 }).toEqual(['all']);
  });

  it('keeps the other sets when the write was notified', async () => {
    const { state, invalidated, notify } = await startWith();
    state.revision += 1;
    notify(['support-bot']);
    await checksPass();
    expect(invalidated).toEqual([['support-bot']]);
  });

  it('still catches a later write whose notification never came', async () => {
    const { state, invalidated, notify } = await startWith();
    state.revision += 1;
    notify(['support-bot']);
    await checksPass();
    state.revision += 1;
    await expect.poll(() => invalidated, { timeout: 2000 }).toEqual([['support-bot'], 'all']);
  });
});
