/**
 * Hot reload under the file-system races of issue #17, with the real chokidar watcher on
 * real directories: a directory removed, recreated and moved while being watched.
 */
import { closeSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentDoc, decide, sqlControl, startWatchedServer, statusOf, waitForStatus, writeIn, type WatchedServer } from './helpers.js';

let server: WatchedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const PATTERNS = ['(?i)drop\\s+table', '(?i)truncate', '(?i)delete\\s+from', '(?i)alter\\s+table', '(?i)grant\\s', '(?i)revoke\\s'];
const QUERIES = ['DROP TABLE users', 'TRUNCATE users', 'DELETE FROM users', 'ALTER TABLE users', 'GRANT all', 'REVOKE all'];

describe('a watched directory removed, recreated and moved', () => {
  it('never leaves the watcher stuck: after each round a later edit is applied', async () => {
    const s = await startWatchedServer({ 'sql.yaml': sqlControl('block', PATTERNS[0]!), 'agents.yaml': agentDoc('bot', ['block']) });
    server = s;
    for (let round = 1; round <= 5; round++) {
      // Removed and recreated, and moved away and back while that happens.
      rmSync(s.dir, { recursive: true, force: true });
      mkdirSync(s.dir);
      renameSync(s.dir, `${s.dir}.away`);
      writeIn(`${s.dir}.away`, 'agents.yaml', agentDoc('bot', ['block']));
      renameSync(`${s.dir}.away`, s.dir);
      writeIn(s.dir, 'sql.yaml', sqlControl('block', PATTERNS[0]!));
      await waitForStatus(s.app, (st) => st.state === 'ok', `round ${round}: the directory valid again`);
      // A later, ordinary edit must be seen.
      const pattern = PATTERNS[round]!;
      await new Promise((r) => setTimeout(r, 400));
      writeIn(s.dir, 'sql.yaml', sqlControl('block', pattern));
      await expect
        .poll(() => decide(s.app, 'bot', QUERIES[round]!), { timeout: 30_000, message: `round ${round}: the edit after the race` })
        .toBe('deny');
    }
  });
});

/** A plain (non-atomic) save in two parts: truncate, write `first`, pause, write `rest`. */
async function saveInTwoParts(path: string, first: string, rest: string, pauseMs: number): Promise<void> {
  const fd = openSync(path, 'w');
  try {
    await new Promise((r) => setTimeout(r, pauseMs));
    writeSync(fd, first);
    await new Promise((r) => setTimeout(r, pauseMs));
    writeSync(fd, rest);
  } finally {
    closeSync(fd);
  }
}

describe('a file saved in parts (a plain, non-atomic write)', () => {
  it('never unlinks or deletes a deny control for the moments the file is half written, nor recreates it', async () => {
    const control = sqlControl('block-drop', '(?i)drop\\s+table');
    const agent = agentDoc('bot', ['block-drop']);
    const s = await startWatchedServer({
      'sql.yaml': `${control}---\n${agent}`,
      'other.yaml': `${sqlControl('other', 'x')}---\n${agentDoc('other-bot', ['other'])}`,
    });
    server = s;
    const id = (await s.store.getControlByName('block-drop'))?.control_id;
    expect(id).toBeDefined();
    expect(await decide(s.app, 'bot', 'DROP TABLE users')).toBe('deny');

    // Evaluate without pause while the file is rewritten, cut at the document boundary.
    let writing = true;
    const decisions: string[] = [];
    const evaluating = (async () => {
      while (writing) decisions.push(await decide(s.app, 'bot', 'DROP TABLE users'));
    })();
    for (let round = 0; round < 3; round++) {
      await saveInTwoParts(join(s.dir, 'sql.yaml'), `${control}---\n`, agent, 250);
      await new Promise((r) => setTimeout(r, 300));
    }
    writing = false;
    await evaluating;

    expect(decisions.length).toBeGreaterThan(10);
    expect(decisions.filter((d) => d !== 'deny')).toEqual([]);
    expect((await s.store.getControlByName('block-drop'))?.control_id).toBe(id);
    const status = await waitForStatus(s.app, (st) => st.state === 'ok' && st.pending_removals === 0, 'the directory settled');
    expect(status.errors).toEqual([]);
  });

  it('applies a real removal once it is planned again after the confirmation delay; an addition at once', async () => {
    const s = await startWatchedServer({
      'sql.yaml': `${sqlControl('block-drop', '(?i)drop\\s+table')}---\n${agentDoc('bot', ['block-drop'])}`,
    });
    server = s;
    const before = await statusOf(s.app);
    writeIn(s.dir, 'sql.yaml', `${sqlControl('block-truncate', '(?i)truncate')}---\n${agentDoc('bot', ['block-truncate'])}`);
    // The new control is in force while the old one's removal waits for confirmation...
    await expect.poll(() => decide(s.app, 'bot', 'TRUNCATE users'), { timeout: 30_000 }).toBe('deny');
    // ...and the removal follows, without any further edit.
    await expect.poll(() => decide(s.app, 'bot', 'DROP TABLE users'), { timeout: 30_000 }).toBe('allow');
    expect(await s.store.getControlByName('block-drop')).toBeNull();
    const after = await waitForStatus(s.app, (st) => st.pending_removals === 0 && st.reloads.success > before.reloads.success, 'the removal applied');
    expect(after.state).toBe('ok');
  });
});
