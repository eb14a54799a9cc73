import type { ControlRecord } from '../../src/model/index.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/types.js';

/** A real in-memory store where agent "bot" has one control, "a": the start of every ControlSetCache test. */
export async function openBotStore(): Promise<Store> {
  const store = await openStore(':memory:');
  await store.upsertAgent({ agent_name: 'bot' });
  const a = await store.createControl({ name: 'a' });
  await store.linkControl('bot', a.control_id);
  return store;
}

/** The cache's compile step in these tests: a set is just its control names, easy to compare. */
export const names = (controls: ControlRecord[]) => controls.map((c) => c.name);
