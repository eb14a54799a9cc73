/**
 * Attacks on sessions shared by replicas on PostgreSQL (issue #37, seventh pass).
 */
import { describe, expect, it } from 'vitest';
import { pgRequired, pgSuiteTitle, pgUnreachable, storeOpener } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_seventh', unreachable);
const label = (l: string) => [{ label: l, control_id: 1, control_name: 'mark', stage: 'post' as const, step_name: 'run_tests', added_at: 0 }];

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('seventh-pass session attacks on PostgreSQL', unreachable), () => {
  it('a slow step of a session\'s first epoch, pruned and begun again under its id, adds no label to the new session', async () => {
    const store = await opener.open();
    const shared = store.sharedSessions;
    // The session's first step (epoch 0) is still being judged when its TTL (1000) passes.
    const slow = (await shared.beginSessionStep('bot', 'ci', 1000, 0, 10))!;
    expect(slow.epoch).toBe(0);
    await shared.pruneSessions(2000);
    // The id is begun again on another replica: a new session, which never passed its tests.
    const other = await opener.open(opener.lastSchema());
    const fresh = (await other.sharedSessions.beginSessionStep('bot', 'ci', 3000, 2000, 10))!;
    expect([...fresh.labels]).toEqual([]);
    // The slow step of the pruned session finishes and adds its label.
    await shared.addSessionLabels('bot', 'ci', slow, label('tests_passed'));
    // The new session's next step does not carry it.
    const third = await opener.open(opener.lastSchema());
    expect([...(await third.sharedSessions.beginSessionStep('bot', 'ci', 3001, 2001, 10))!.labels]).toEqual([]);
    expect(await third.sharedSessions.readSession('bot', 'ci', 2001)).toMatchObject({ labels: [] });
  });
});
