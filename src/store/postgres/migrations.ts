/**
 * The PostgreSQL schema, the same model as SQLite's in PostgreSQL's dialect. Ordered and
 * append-only like the SQLite list. Event stats read only the covering indexes (INCLUDE),
 * so they never touch the table once autovacuum has marked the pages all-visible.
 */
import type { Migration } from '../migrations.js';
import { COUNTER_SINCE } from './counter-since.js';
import { FIRST_MIGRATIONS } from './migrations-first.js';
import { SESSION_BEGIN_STEP, SESSION_BEGIN_STEPS } from './session-begin-steps.js';
import { SESSION_CACHERS, SESSION_PING } from './session-ping.js';

export const postgresMigrations: readonly Migration[] = [
  ...FIRST_MIGRATIONS,
  {
    version: 8,
    name: 'sessions and their labels, shared by the replicas; the session of recorded steps',
    // A session's labels belong to its epoch: a session idle past its TTL starts again in
    // the next epoch, and the labels of earlier epochs no longer count (pruned later).
    // session_count holds how many sessions there are, so that a new session is refused at
    // GUARD_SESSION_MAX by one row update (store/postgres/sessions.ts).
    sql: `
      CREATE TABLE sessions (
        agent_name TEXT NOT NULL,
        session_id TEXT NOT NULL,
        epoch INTEGER NOT NULL DEFAULT 0,
        first_seen DOUBLE PRECISION NOT NULL,
        last_seen DOUBLE PRECISION NOT NULL,
        steps BIGINT NOT NULL,
        PRIMARY KEY (agent_name, session_id)
      );
      CREATE INDEX sessions_last_seen ON sessions (last_seen);
      CREATE TABLE session_labels (
        agent_name TEXT NOT NULL,
        session_id TEXT NOT NULL,
        label TEXT NOT NULL,
        epoch INTEGER NOT NULL,
        control_id BIGINT NOT NULL,
        control_name TEXT NOT NULL,
        stage TEXT NOT NULL,
        step_name TEXT NOT NULL,
        added_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (agent_name, session_id, label)
      );
      CREATE TABLE session_count (id INTEGER PRIMARY KEY CHECK (id = 1), n BIGINT NOT NULL);
      INSERT INTO session_count (id, n) VALUES (1, 0);
      ALTER TABLE recorded_steps ADD COLUMN session_id TEXT;
    `,
  },
  {
    version: 9,
    name: 'approvals of asked steps',
    // Times are epoch ms, as the replicas pass them (the same rules as SQLite's, approval-rules.ts).
    sql: `
      CREATE TABLE approvals (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        digest TEXT NOT NULL,
        status TEXT NOT NULL,
        agent_name TEXT NOT NULL,
        stage TEXT NOT NULL,
        step_type TEXT NOT NULL,
        step_name TEXT NOT NULL,
        control_id INTEGER NOT NULL,
        control_name TEXT NOT NULL,
        step JSONB NOT NULL,
        timeout_ms BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        decided_at BIGINT,
        decided_by TEXT,
        reason TEXT,
        used_at BIGINT
      );
      CREATE INDEX approvals_digest ON approvals (digest, seq);
      CREATE INDEX approvals_status ON approvals (status, seq);
    `,
  },
  {
    version: 10,
    name: 'agent labels and policies',
    // As SQLite's migration 6: membership is resolved at write time (policy_members), so
    // an agent's control set stays one statement.
    sql: `
      ALTER TABLE agents ADD COLUMN labels JSONB NOT NULL DEFAULT '{}';
      CREATE TABLE policies (
        policy_id BIGSERIAL PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        description TEXT,
        agents JSONB NOT NULL,
        managed_by TEXT,
        source TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );
      CREATE TABLE policy_controls (
        policy_id BIGINT NOT NULL REFERENCES policies (policy_id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        control_id BIGINT NOT NULL REFERENCES controls (control_id) ON DELETE CASCADE,
        PRIMARY KEY (policy_id, control_id)
      );
      CREATE INDEX policy_controls_control ON policy_controls (control_id);
      CREATE TABLE policy_members (
        agent_name TEXT NOT NULL REFERENCES agents (agent_name) ON DELETE CASCADE,
        policy_id BIGINT NOT NULL REFERENCES policies (policy_id) ON DELETE CASCADE,
        PRIMARY KEY (agent_name, policy_id)
      );
      CREATE INDEX policy_members_policy ON policy_members (policy_id);
      ALTER TABLE change_log ADD COLUMN policy_id BIGINT;
      CREATE INDEX change_log_policy ON change_log (policy_id, id) WHERE policy_id IS NOT NULL;
    `,
  },
  {
    version: 11,
    name: 'the session of each event',
    // A partial index: sessionless events cost ingest nothing (see the SQLite migration 9).
    sql: `
      ALTER TABLE events ADD COLUMN session_id TEXT;
      CREATE INDEX events_session ON events (session_id, ts) WHERE session_id IS NOT NULL;
    `,
  },
  {
    version: 12,
    name: 'pinned MCP servers',
    sql: `
      CREATE TABLE mcp_servers (
        mcp_server_id BIGSERIAL PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        document JSONB NOT NULL,
        managed_by TEXT,
        source TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );
    `,
  },
  {
    version: 13,
    name: 'a control a policy binds cannot be deleted',
    // As SQLite's migration 11: the database's own refusal behind the stores' check.
    sql: `
      ALTER TABLE policy_controls DROP CONSTRAINT policy_controls_control_id_fkey,
        ADD CONSTRAINT policy_controls_control_id_fkey FOREIGN KEY (control_id) REFERENCES controls (control_id) ON DELETE RESTRICT;
    `,
  },
  {
    version: 14,
    name: 'session rows updated in place; steps begun in batches',
    // Every step updates its session's row (steps, last_seen). With last_seen indexed, each
    // update was a new row version with new entries in both indexes, and a busy session's
    // lookups walked thousands of dead versions until vacuum came. Without that index, and
    // with room left on each page, the update is HOT (heap-only, pruned as pages are read).
    // Pruning idle sessions scans the table instead: it holds at most GUARD_SESSION_MAX
    // rows, and the prune already counts them all.
    // session_begin_steps begins a replica's steps in flight in one call (session-begin-steps.ts).
    sql: `
      DROP INDEX IF EXISTS sessions_last_seen;
      ALTER TABLE sessions SET (fillfactor = 50);
      ${SESSION_BEGIN_STEPS}
    `,
  },
  {
    version: 15,
    name: 'replicas answer steps of sessions from a cache',
    // Steps of a session a replica read lately are answered without the database; a replica
    // adding a label waits for every cacher to drop that session (session-cache.ts).
    sql: `${SESSION_CACHERS}${SESSION_PING}`,
  },
  {
    version: 16,
    name: 'a step of a session being pruned takes a slot',
    // session_begin_steps reads the steps' session rows under their lock (session-begin-steps.ts).
    sql: SESSION_BEGIN_STEPS,
  },
  {
    version: 17,
    name: 'a label statement holds its session row against the prune',
    // Label statements hold the session's row FOR KEY SHARE (sessions.ts ADD_LABELS), which
    // the prune's FOR UPDATE waits for; steps lock the rows FOR NO KEY UPDATE, which does not.
    sql: `${SESSION_BEGIN_STEPS}${SESSION_PING}`,
  },
  {
    version: 18,
    name: 'a batch of steps does not wait for a session created since it began',
    // session_begin_steps creates its new sessions ON CONFLICT DO NOTHING (session-begin-steps.ts).
    sql: SESSION_BEGIN_STEPS,
  },
  {
    version: 19,
    name: 'a step alone does not wait on a session row while it holds the count',
    // A step alone is begun by session_begin_step, which gives its slot back when its new
    // session was created meanwhile (session-begin-steps.ts), instead of waiting on that
    // session's row while holding session_count's (a deadlock with a prune and a batch).
    sql: SESSION_BEGIN_STEP,
  },
  {
    version: 20,
    name: 'steps do not wait for a prune deleting a new session while they hold the count',
    // session_begin_steps and session_begin_step lock a session created meanwhile FOR KEY
    // SHARE NOWAIT before their insert, and give their slots back when it is there or a
    // prune holds it (session-begin-steps.ts).
    sql: `${SESSION_BEGIN_STEPS}${SESSION_BEGIN_STEP}`,
  },
  {
    version: 21,
    name: 'a step names its session\'s epoch with the time it began',
    // session_begin_steps and session_begin_step answer the epoch's first_seen too: a label
    // statement adds labels only to the epoch that began then (sessions.ts ADD_LABELS), not
    // to a session begun again under the id after a prune, whose epoch is 0 again. A
    // function's answer cannot change its columns in place. A step alone refused at the
    // bound counts on its session when that session was created while it waited.
    sql: `
      DROP FUNCTION session_begin_steps(TEXT[], TEXT[], BIGINT[], DOUBLE PRECISION, DOUBLE PRECISION, BIGINT);
      DROP FUNCTION session_begin_step(TEXT, TEXT, DOUBLE PRECISION, DOUBLE PRECISION, BIGINT);
      ${SESSION_BEGIN_STEPS}${SESSION_BEGIN_STEP}
    `,
  },
  {
    version: 22,
    name: 'what the question of an approval counted',
    // See the SQLite migration 12.
    sql: `ALTER TABLE approvals ADD COLUMN counted TEXT;`,
  },
  {
    version: 23,
    name: 'when each key\'s counts began',
    // A key emptied by a window change and changed back holds none of a question's counts (counter-since.ts).
    sql: COUNTER_SINCE,
  },
];
