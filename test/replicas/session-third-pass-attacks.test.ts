/**
 * Attacks on sessions shared by replicas on PostgreSQL (issue #37, third pass): replica
 * clocks that differ, and a label statement racing the prune.
 */
import { describe, expect, it } from 'vitest';
import { SharedSessions } from '../../src/sessions/index.js';
import { pgRequired, pgSuiteTitle, pgUnreachable, storeOpener } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_third', unreachable);
const mark = (label: string) => [{ label, control_id: 1, control_name: `mark-${label}` }];
const DAY = 86_400_000;

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('third-pass session attacks on PostgreSQL', unreachable), () => {
  it("a replica whose clock runs a minute ahead does not prune another replica's live session and its label", async () => {
    const store = await opener.open();
    const other = await opener.open(opener.lastSchema());
    const settings = { sessionTtlMs: DAY, sessionMax: 100 };
    // A's clock is right; B's runs 60 s ahead (an NTP step missed, a VM resumed).
    let real = 1_800_000_000_000;
    const a = new SharedSessions(store.sharedSessions, settings, () => real);
    const b = new SharedSessions(other.sharedSessions, settings, () => real + 60_000);
    try {
      await a.add('bot', 'victim', (await a.begin('bot', 'victim'))!, mark('untrusted_content'), 'post', 'fetch_url');
      // The session is idle 23 h 59 m 30 s: within its TTL on any right clock.
      real += DAY - 30_000;
      await b.prune();
      expect([...(await a.begin('bot', 'victim'))!.labels]).toEqual(['untrusted_content']);
    } finally {
      await a.close();
      await b.close();
    }
  });

});
