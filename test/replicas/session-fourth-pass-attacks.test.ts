/**
 * Attacks on sessions shared by replicas on PostgreSQL (issue #37, fourth pass): the
 * replica's clock, set to the database's at start and at each prune, stepped between
 * prunes or not read at start.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SharedSessions } from '../../src/sessions/index.js';
import { pgRequired, pgSuiteTitle, pgUnreachable, storeOpener } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_fourth', unreachable);
const mark = (label: string) => [{ label, control_id: 1, control_name: `mark-${label}` }];

afterEach(() => {
  vi.restoreAllMocks();
});

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('fourth-pass session attacks on PostgreSQL', unreachable), () => {
  it("a replica whose wall clock is stepped a minute forward between prunes does not restart a live session and drop its label", async () => {
    const store = await opener.open();
    // The replica's own clock, as a server has it: the wall clock, stepped below (NTP
    // setting right a clock that ran a minute behind; the database's clock did not move).
    const wall = Date.now.bind(Date);
    let stepped = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => wall() + stepped);
    const sessions = new SharedSessions(store.sharedSessions, { sessionTtlMs: 60_000, sessionMax: 100 });
    try {
      await sessions.add('bot', 'victim', (await sessions.begin('bot', 'victim'))!, mark('untrusted_content'), 'post', 'fetch_url');
      stepped = 61_000;
      // On the database's clock the session was idle a few milliseconds, well within its TTL.
      expect([...(await sessions.begin('bot', 'victim'))!.labels]).toEqual(['untrusted_content']);
    } finally {
      await sessions.close();
    }
  });
});
