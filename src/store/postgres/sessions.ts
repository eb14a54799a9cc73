/**
 * Sessions shared by the replicas (docs/sessions.md), exact: a step's labels are read in
 * the statement that counts the step, after every label added by an answered step was
 * committed, or from this replica's cache, which no answered label is missing from
 * (session-cache.ts), so a label added through one replica decides on another at the very
 * next step. Concurrent steps of one session update its row under the row's lock (the step
 * count never loses one), and labels are added by an upsert keyed by label (two steps
 * adding labels at once both keep theirs). Steps in flight together on one replica are
 * begun by one statement (session-steps.ts); labels are committed synchronously, step
 * counts without waiting for the WAL flush.
 */
import type { SharedSessionStep, SharedSessionStore, StoredSession, StoredSessionLabel } from '../types.js';
import type { PostgresDatabase } from './database.js';
import { SessionCache } from './session-cache.js';
import { SESSION_CACHE_CHANNEL } from './session-ping.js';
import { SessionStepBatcher } from './session-steps.js';

/**
 * One step alone (steps are begun in batches, session-steps.ts BEGIN_STEPS; a step whose
 * new session a batch had no room for comes here), by session_begin_step
 * (session-begin-steps.ts): a new session takes a slot in session_count (refused at `max`:
 * no row comes back); an existing one counts the step, and starts a new epoch when it was
 * idle past its TTL. A step that finds its new session created by another statement
 * meanwhile gives its slot back. Committed without waiting for the WAL flush, as a batch is.
 */
const BEGIN_STEP = 'SELECT began_epoch AS epoch, began_since::numeric AS since, began_labels AS labels FROM session_begin_step($1, $2, $3, $4, $5)';

/**
 * Only a step of the session's current epoch adds labels: one that outlived its session
 * (pruned, then begun again under its id) adds nothing, so it can neither move a label of
 * the live epoch to its own nor leave one behind. The epoch is named by its number and the
 * time it began (first_seen): a session begun again under its id starts at epoch 0 again,
 * and named by its number alone, a step of the deleted session's epoch 0 would add its
 * label to the new session, which never earned it (a `tests_passed` of the run before).
 * The time is compared to the millisecond, not exactly: it comes back as text, and two
 * epochs of one id begin a TTL apart. It is read as numeric (BEGIN_STEP, BEGIN_STEPS),
 * which PostgreSQL prints with 15 significant digits (hundredths of a millisecond) however
 * extra_float_digits is set: a float is printed with as few as one digit (a server or role
 * set to extra_float_digits = -3 rounds an epoch time to 10 ms), and the label of a time
 * read back that far off would not be added, silently. The session's row is held (FOR KEY SHARE, which steps counting it do not wait
 * for) until the labels commit: a prune deleting the row meanwhile waits for them and
 * deletes them with it, or deleted it first and the labels are not added; read without the
 * lock, labels inserted after the prune deleted their orphans were left behind, and a
 * session begun again under the id (a new row, epoch 0) inherited them. Steps lock the row
 * FOR NO KEY UPDATE, which neither waits for a label statement nor makes one wait. A label
 * already there of the same epoch keeps its first adder; one of an earlier epoch (left
 * from it) is replaced, and one of a later epoch is left alone: the step's session moved
 * on after its check (a step locking the row does not wait for that check), and the later
 * epoch's label, answered to its step, would be moved to the dead epoch and lost. A
 * label's epoch is never past its session's (labels are added under the check, and the
 * prune deletes a session's labels with its row). Replaced in label order, the order in
 * which the prune deletes such rows (or the two could each hold a row the other waits for,
 * and the step fail as a deadlock's victim). The session's drop goes to every replica's
 * cache at the commit (session-cache.ts).
 */
const ADD_LABELS = `
  WITH held AS (
    SELECT 1 FROM sessions s WHERE s.agent_name = $1 AND s.session_id = $2 AND s.epoch = $3 AND abs(s.first_seen - $11) < 1 FOR KEY SHARE
  ), added AS (INSERT INTO session_labels (agent_name, session_id, label, epoch, control_id, control_name, stage, step_name, added_at)
    SELECT $1, $2, u.label, $3, u.control_id, u.control_name, u.stage, u.step_name, u.added_at
    FROM unnest($4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::double precision[])
      AS u(label, control_id, control_name, stage, step_name, added_at)
    WHERE EXISTS (SELECT 1 FROM held)
    ORDER BY u.label
  ON CONFLICT (agent_name, session_id, label) DO UPDATE SET epoch = excluded.epoch, control_id = excluded.control_id,
    control_name = excluded.control_name, stage = excluded.stage, step_name = excluded.step_name, added_at = excluded.added_at
    WHERE session_labels.epoch < excluded.epoch
    RETURNING 1)
  SELECT pg_notify('${SESSION_CACHE_CHANNEL}', $10), (SELECT count(*) FROM added) AS added`;

interface SessionDbRow {
  epoch: number;
  first_seen: number;
  last_seen: number;
  steps: string;
}

interface LabelDbRow {
  label: string;
  control_id: string;
  control_name: string;
  stage: string;
  step_name: string;
  added_at: number;
}

export class PostgresSessions implements SharedSessionStore {
  readonly #batcher: SessionStepBatcher;
  readonly cache: SessionCache;

  constructor(
    private readonly database: PostgresDatabase,
    listenerRetryMs = 1000,
  ) {
    this.#batcher = new SessionStepBatcher(database, (...step) => this.#beginAlone(...step));
    this.cache = new SessionCache(database, listenerRetryMs);
  }

  /**
   * From this replica's cache when it holds the session (session-cache.ts), else begun with
   * the steps in flight with it, in one statement (session-steps.ts), and cached.
   */
  beginSessionStep(agentName: string, sessionId: string, now: number, expiredBefore: number, max: number): SharedSessionStep | Promise<SharedSessionStep | null> {
    const cached = this.cache.step(agentName, sessionId, now, now - expiredBefore);
    if (cached !== undefined) return cached;
    const generation = this.cache.generation;
    return this.#batcher.begin(agentName, sessionId, now, expiredBefore, max).then((step) => {
      if (step !== null) this.cache.remember(agentName, sessionId, step, now, generation);
      return step;
    });
  }

  /** One step alone: takes a slot for a new session when there is room for one. */
  async #beginAlone(agentName: string, sessionId: string, now: number, expiredBefore: number, max: number): Promise<SharedSessionStep | null> {
    const rows = await this.database.prepared<{ epoch: number; since: string; labels: string[] }>('guard_session_begin_step_fn', BEGIN_STEP, [agentName, sessionId, now, expiredBefore, max]);
    const row = rows[0];
    return row === undefined ? null : { epoch: row.epoch, since: Number(row.since), labels: new Set(row.labels) };
  }

  async addSessionLabels(agentName: string, sessionId: string, step: SharedSessionStep, labels: readonly StoredSessionLabel[]): Promise<void> {
    if (labels.length === 0) return;
    const drop = this.cache.dropMessage(agentName, sessionId);
    await this.cache.whileDropping(drop.token, () => this.database.query(ADD_LABELS, [
      agentName,
      sessionId,
      step.epoch,
      labels.map((l) => l.label),
      labels.map((l) => l.control_id),
      labels.map((l) => l.control_name),
      labels.map((l) => l.stage),
      labels.map((l) => l.step_name),
      labels.map((l) => l.added_at),
      drop.payload,
      step.since,
    ]));
    await this.cache.dropped(agentName, sessionId, drop.token);
  }

  async readSession(agentName: string, sessionId: string, expiredBefore: number): Promise<StoredSession | null> {
    // Steps answered from the replicas' caches are written first, so the count is exact.
    await this.cache.gather(agentName, sessionId);
    const sessions = await this.database.query<SessionDbRow>(
      'SELECT epoch, first_seen, last_seen, steps FROM sessions WHERE agent_name = $1 AND session_id = $2 AND last_seen > $3',
      [agentName, sessionId, expiredBefore],
    );
    const session = sessions[0];
    if (session === undefined) return null;
    const labels = await this.database.query<LabelDbRow>(
      `SELECT label, control_id, control_name, stage, step_name, added_at FROM session_labels
        WHERE agent_name = $1 AND session_id = $2 AND epoch = $3 ORDER BY added_at, label`,
      [agentName, sessionId, session.epoch],
    );
    return {
      agent_name: agentName,
      session_id: sessionId,
      first_seen: session.first_seen,
      last_seen: session.last_seen,
      steps: Number(session.steps),
      labels: labels.map((l) => ({ ...l, control_id: Number(l.control_id), stage: l.stage === 'post' ? 'post' : 'pre' })),
    };
  }

  databaseTime(): Promise<number> {
    return this.database.databaseTime();
  }

  async pruneSessions(expiredBefore: number): Promise<number> {
    return this.database.write(async (tx) => {
      // The expired rows are locked in key order first, as a batch of steps locks its
      // sessions' rows (session-steps.ts): deleted in the table's order, a prune and a batch
      // could each hold a row the other waits for.
      await this.database.rows(tx, 'SELECT 1 FROM sessions WHERE last_seen <= $1 ORDER BY agent_name, session_id FOR UPDATE', [expiredBefore]);
      await this.database.rows(tx, 'DELETE FROM sessions WHERE last_seen <= $1', [expiredBefore]);
      // Labels of no live epoch, locked in key order as well (a step replacing its session's
      // labels of an earlier epoch, ADD_LABELS, takes them in that order), then deleted by a
      // statement of its own: its snapshot sees a row such a step moved to the live epoch
      // while this ran (committed before the lock was granted) and leaves it. Checked by the
      // locking statement alone, the row was re-read but its session was not, and the label
      // the step had answered was deleted.
      const orphans = await this.database.rows<{ agent_name: string; session_id: string; label: string }>(
        tx,
        `SELECT l.agent_name, l.session_id, l.label FROM session_labels l WHERE NOT EXISTS (SELECT 1 FROM sessions s
          WHERE s.agent_name = l.agent_name AND s.session_id = l.session_id AND s.epoch = l.epoch)
          ORDER BY l.agent_name, l.session_id, l.label FOR UPDATE OF l`,
      );
      if (orphans.length > 0) {
        await this.database.rows(
          tx,
          `DELETE FROM session_labels l USING unnest($1::text[], $2::text[], $3::text[]) AS o(agent_name, session_id, label)
            WHERE l.agent_name = o.agent_name AND l.session_id = o.session_id AND l.label = o.label
              AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.agent_name = l.agent_name AND s.session_id = l.session_id AND s.epoch = l.epoch)`,
          [orphans.map((o) => o.agent_name), orphans.map((o) => o.session_id), orphans.map((o) => o.label)],
        );
      }
      // Replicas gone for a minute (a closed one deletes its own row).
      await this.database.rows(tx, 'DELETE FROM session_cachers WHERE expires_at < extract(epoch FROM clock_timestamp()) * 1000 - 60000');
      // The count's row is locked before the count: a statement that waited for the lock
      // keeps the snapshot it began with, so a new session committed meanwhile (its slot
      // taken under that lock) would be left out and the bound recounted one low. The next
      // statement sees every session whose slot was taken before this lock.
      await this.database.rows(tx, 'SELECT 1 FROM session_count WHERE id = 1 FOR UPDATE');
      const left = await this.database.rows<{ n: string }>(tx, 'UPDATE session_count SET n = (SELECT count(*) FROM sessions) WHERE id = 1 RETURNING n');
      return Number(left[0]?.n ?? 0);
    });
  }

  /** Writes the steps counted in memory and stops answering from the cache. */
  close(): Promise<void> {
    return this.cache.close();
  }
}
