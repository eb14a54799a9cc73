/**
 * Attacks on the sessions of one server (issue #37): a flood at GUARD_SESSION_MAX and a
 * restart, trying to make a label a deny control depends on disappear.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemorySessions } from '../../src/sessions/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const mark = (label: string) => [{ label, control_id: 7, control_name: `mark-${label}` }];
const settings = { sessionTtlMs: 1_000, sessionMax: 2 };

describe('session attacks on one server', () => {
  it('a flood at the bound that sweeps while a live session’s row waits to be written loses none of its labels over a restart', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'guard-sess-attack-')), 'guard.db');
    let now = 10_000;
    const store = new SqliteStore(path);
    const first = new MemorySessions(settings, store.sessionRows, () => now, 'by-caller');
    first.add('bot', 'victim', first.begin('bot', 'victim')!, mark('untrusted'), 'post', 'fetch_url');
    // Just before its TTL, the victim takes a step: alive in memory, its row's last step not yet written.
    now = 10_900;
    expect([...first.begin('bot', 'victim')!.labels]).toEqual(['untrusted']);
    expect(first.begin('bot', 'filler')).not.toBeNull();
    // A new id at the bound makes the server sweep (the victim's row in the file still says 10_000).
    now = 11_050;
    expect(first.begin('bot', 'flood-1')).toBeNull();
    first.writeTouched();
    await first.close();
    await store.close();

    const reopened = new SqliteStore(path);
    const second = new MemorySessions(settings, reopened.sessionRows, () => now, 'by-caller');
    try {
      expect([...second.begin('bot', 'victim')!.labels]).toEqual(['untrusted']);
    } finally {
      await second.close();
      await reopened.close();
    }
  });

  it('a flood of unique ids never holds more than GUARD_SESSION_MAX, and a held labelled session keeps its label', () => {
    let now = 10_000;
    const sessions = new MemorySessions({ sessionTtlMs: 60_000, sessionMax: 50 }, undefined, () => now, 'by-caller');
    sessions.add('bot', 'victim', sessions.begin('bot', 'victim')!, mark('untrusted'), 'post', 'fetch_url');
    let refused = 0;
    for (let i = 0; i < 5_000; i++) {
      now += 7;
      if (sessions.begin('bot', `flood-${i}`) === null) refused++;
      expect(sessions.size).toBeLessThanOrEqual(50);
    }
    expect(refused).toBeGreaterThan(0);
    // 35 s later: well within the victim's TTL, it still carries its label.
    expect([...sessions.begin('bot', 'victim')!.labels]).toEqual(['untrusted']);
  });

  it('session ids that differ by case, Unicode normalisation or trailing spaces are other sessions: none of them takes the label away', () => {
    const sessions = new MemorySessions({ sessionTtlMs: 60_000, sessionMax: 10 }, undefined, () => 1_000, 'by-caller');
    const id = 'Run-\u00e9';
    sessions.add('bot', id, sessions.begin('bot', id)!, mark('untrusted'), 'post', 'fetch_url');
    for (const other of ['run-\u00e9', 'Run-e\u0301', `${id} `, `${id}\u00a0`]) {
      expect([...sessions.begin('bot', other)!.labels]).toEqual([]);
    }
    // Another agent's session of the same id is its own.
    expect([...sessions.begin('other-bot', id)!.labels]).toEqual([]);
    expect([...sessions.begin('bot', id)!.labels]).toEqual(['untrusted']);
  });
});
