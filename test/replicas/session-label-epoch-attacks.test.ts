/**
 * Attacks on the label replace rule of ADD_LABELS (issue #37, second pass): a slow step of
 * a pruned session adds its label after the session was begun again under the same id.
 */
import { describe, expect, it } from 'vitest';
import { pgRequired, pgSuiteTitle, pgUnreachable, storeOpener } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_label_epoch', unreachable);
const label = (l: string) => [{ label: l, control_id: 1, control_name: 'mark', stage: 'post' as const, step_name: 'fetch_url', added_at: 0 }];

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('label epoch attacks on PostgreSQL', unreachable), () => {
  it('a slow step of a pruned session adding a label after the new session added it does not take it from the new session', async () => {
    const store = await opener.open();
    const shared = store.sharedSessions;
    await shared.beginSessionStep('bot', 's', 1000, 0, 10);
    // A slow step of the session's second epoch (its TTL of 1000 passed before it).
    const slow = (await shared.beginSessionStep('bot', 's', 3000, 2000, 10))!;
    expect(slow.epoch).toBe(1);
    await shared.pruneSessions(4000);
    // The session begun again under the id (epoch 0) is marked untrusted first ...
    const fresh = await opener.open(opener.lastSchema());
    const step = (await fresh.sharedSessions.beginSessionStep('bot', 's', 5000, 4000, 10))!;
    expect(step.epoch).toBe(0);
    await fresh.sharedSessions.addSessionLabels('bot', 's', step, label('untrusted'));
    // ... then the slow step of the pruned epoch 1 finishes and adds the same label.
    await shared.addSessionLabels('bot', 's', slow, label('untrusted'));
    // The label answered as added to the live session still decides at its next step.
    const other = await opener.open(opener.lastSchema());
    expect([...(await other.sharedSessions.beginSessionStep('bot', 's', 5001, 4001, 10))!.labels]).toEqual(['untrusted']);
    expect((await other.sharedSessions.readSession('bot', 's', 4001))!.labels.map((l) => l.label)).toEqual(['untrusted']);
  });
});
