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
  return {
    state,
    invalidated,
    /** A notification as PostgreSQL sends it: the agents and the revision the write produced. */
    notify: (agents: string[], revision = state.revision) => listener!({ agents, revision }),
    notifyWithoutRevision: (agents: string[]) => listener!({ agents }),
  };
}

const checksPass = () => new Promise((resolve) => setTimeout(resolve, 150));

describe('replica sync fallback', () => {
  it('invalidates everything when the revision moved without a notification', async () => {
    const { state, invalidated } = await startWith();
    state.revision += 1;
    await expect.poll(() => invalidated, { timeout: 30_000 }).toEqual(['all']);
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
    await expect.poll(() => invalidated, { timeout: 30_000 }).toEqual([['support-bot'], 'all']);
  });

  it('does not let a late notification cover for a later write whose notification was lost', async () => {
    const { state, invalidated, notify } = await startWith();
    // A write the checks see before its notification arrives...
    state.revision += 1;
    await expect.poll(() => invalidated, { timeout: 30_000 }).toEqual(['all']);
    notify(['support-bot'], state.revision);
    // ...then a write that is never announced: it is caught all the same.
    state.revision += 1;
    await expect.poll(() => invalidated, { timeout: 30_000 }).toEqual(['all', ['support-bot'], 'all']);
  });

  it('counts each announced revision: two writes and one notification is a silent write', async () => {
    const { state, invalidated, notify } = await startWith();
    state.revision += 2;
    notify(['support-bot'], state.revision);
    await expect.poll(() => invalidated, { timeout: 30_000 }).toEqual([['support-bot'], 'all']);
  });

  it('invalidates everything after a notification that names no revision (a replica of an earlier version)', async () => {
    const { state, invalidated, notifyWithoutRevision } = await startWith();
    state.revision += 1;
    notifyWithoutRevision(['support-bot']);
    await expect.poll(() => invalidated, { timeout: 30_000 }).toEqual([['support-bot'], 'all']);
  });

  it('invalidates everything when the revision goes down (the database was replaced)', async () => {
    const { state, invalidated } = await startWith();
    state.revision -= 1;
    await expect.poll(() => invalidated, { timeout: 30_000 }).toEqual(['all']);
  });
});
