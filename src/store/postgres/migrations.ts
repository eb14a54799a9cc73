/**
 * The PostgreSQL schema, the same model as SQLite's in PostgreSQL's dialect. Ordered and
 * append-only like the SQLite list. Event stats read only the covering indexes (INCLUDE),
 * so they never touch the table once autovacuum has marked the pages all-visible.
 */
import type { Migration } from '../migrations.js';
import { COUNTER_TAKE_LEASED } from './counter-take-leased.js';
import { SESSION_BEGIN_STEPS } from './session-begin-steps.js';
import { SESSION_PING } from './session-ping.js';

export const postgresMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'controls, agents, links, revision, events',
    sql: `
      CREATE TABLE controls (
        control_id BIGSERIAL PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        enabled BOOLEAN NOT NULL DEFAULT TRUE,
        data JSONB,
        managed_by TEXT,
        source TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );
      CREATE TABLE agents (
        agent_name TEXT PRIMARY KEY,
        agent_description TEXT,
        agent_version TEXT,
        steps JSONB NOT NULL DEFAULT '[]',
        metadata JSONB,
        managed_by TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL
      );
      CREATE TABLE control_links (
        agent_name TEXT NOT NULL REFERENCES agents (agent_name) ON DELETE CASCADE,
        control_id BIGINT NOT NULL REFERENCES controls (control_id) ON DELETE CASCADE,
        PRIMARY KEY (agent_name, control_id)
      );
      CREATE INDEX control_links_control ON control_links (control_id);
      CREATE TABLE store_revision (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        value BIGINT NOT NULL
      );
      INSERT INTO store_revision (id, value) VALUES (1, 0);
      CREATE TABLE events (
        id BIGSERIAL PRIMARY KEY,
        control_execution_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        span_id TEXT NOT NULL,
        agent_name TEXT NOT NULL,
        control_id BIGINT NOT NULL,
        control_name TEXT NOT NULL,
        check_stage TEXT NOT NULL,
        applies_to TEXT NOT NULL,
        action TEXT NOT NULL,
        matched BOOLEAN NOT NULL,
        outcome SMALLINT NOT NULL,
        confidence DOUBLE PRECISION NOT NULL,
        ts TIMESTAMPTZ NOT NULL,
        execution_duration_ms DOUBLE PRECISION NOT NULL,
        evaluator_name TEXT,
        selector_path TEXT,
        error_message TEXT,
        metadata JSONB
      );
      CREATE INDEX events_ts ON events (ts) INCLUDE (control_id, outcome, action, execution_duration_ms);
      CREATE INDEX events_agent_ts ON events (agent_name, ts) INCLUDE (control_id, outcome, action, execution_duration_ms);
      CREATE INDEX events_control_ts ON events (control_id, ts) INCLUDE (outcome, action, execution_duration_ms);
      CREATE INDEX events_trace ON events (trace_id);
    `,
  },
  {
    version: 2,
    name: 'recorded steps (replay)',
    sql: `
      CREATE TABLE recorded_steps (
        id BIGSERIAL PRIMARY KEY,
        ts TIMESTAMPTZ NOT NULL,
        agent_name TEXT NOT NULL,
        stage TEXT NOT NULL,
        step JSONB NOT NULL,
        decision TEXT NOT NULL
      );
      CREATE INDEX recorded_steps_ts ON recorded_steps (ts);
      CREATE INDEX recorded_steps_agent ON recorded_steps (agent_name, id);
    `,
  },
  {
    version: 3,
    name: 'non-match rollups',
    // See the SQLite migration 3: non-matches counted per minute; old non-match rows folded in.
    sql: `
      CREATE TABLE event_rollups (
        bucket TIMESTAMPTZ NOT NULL,
        agent_name TEXT NOT NULL,
        control_id BIGINT NOT NULL,
        control_name TEXT NOT NULL,
        check_stage TEXT NOT NULL,
        applies_to TEXT NOT NULL,
        evaluator_name TEXT NOT NULL,
        count BIGINT NOT NULL,
        total_duration_ms DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (bucket, agent_name, control_id, control_name, check_stage, applies_to, evaluator_name)
      );
      CREATE INDEX event_rollups_control ON event_rollups (control_id, bucket) INCLUDE (count, total_duration_ms);
      CREATE INDEX event_rollups_agent ON event_rollups (agent_name, bucket) INCLUDE (control_id, count, total_duration_ms);
      INSERT INTO event_rollups
        SELECT to_timestamp(floor(extract(epoch FROM ts) / 60) * 60), agent_name, control_id, control_name,
          check_stage, applies_to, coalesce(evaluator_name, ''), count(*), coalesce(sum(execution_duration_ms), 0)
        FROM events WHERE outcome = 0
        GROUP BY 1, 2, 3, 4, 5, 6, 7;
    `,
  },
  {
    version: 4,
    name: 'history and audit; shadow mode in events and rollups; set_revision',
    // See the SQLite migration 4. Adding columns with a constant default rewrites nothing.
    sql: `
      CREATE TABLE change_log (
        id BIGSERIAL PRIMARY KEY,
        revision BIGINT NOT NULL,
        ts TIMESTAMPTZ NOT NULL,
        actor TEXT NOT NULL,
        source TEXT NOT NULL,
        kind TEXT NOT NULL,
        op TEXT NOT NULL,
        control_id BIGINT,
        control_name TEXT,
        agent_name TEXT,
        before JSONB,
        after JSONB,
        note TEXT
      );
      CREATE INDEX change_log_control ON change_log (control_id, id);
      CREATE INDEX change_log_ts ON change_log (ts);
      CREATE INDEX change_log_actor ON change_log (actor, id);
      INSERT INTO change_log (revision, ts, actor, source, kind, op, control_id, control_name, agent_name, before, after, note)
        SELECT (SELECT value FROM store_revision WHERE id = 1), now(), 'upgrade',
          CASE WHEN managed_by LIKE 'watch:%' THEN 'watch' WHEN managed_by IS NOT NULL THEN 'apply' ELSE 'api' END,
          'control', 'create', control_id, name, NULL, NULL,
          jsonb_build_object('name', name, 'enabled', enabled,
            'data', CASE WHEN data IS NULL THEN NULL ELSE data || jsonb_build_object('enabled', enabled) END,
            'managed_by', managed_by, 'source', source),
          'the control as it was when its history began (upgrade)'
        FROM controls ORDER BY control_id;
      ALTER TABLE events ADD COLUMN mode TEXT NOT NULL DEFAULT 'enforce',
        ADD COLUMN set_revision BIGINT, ADD COLUMN example TEXT;
      ALTER TABLE event_rollups ADD COLUMN mode TEXT NOT NULL DEFAULT 'enforce';
      ALTER TABLE event_rollups DROP CONSTRAINT event_rollups_pkey;
      ALTER TABLE event_rollups ADD PRIMARY KEY (bucket, agent_name, control_id, control_name, check_stage, applies_to, evaluator_name, mode);
      DROP INDEX event_rollups_control;
      DROP INDEX event_rollups_agent;
      CREATE INDEX event_rollups_control ON event_rollups (control_id, bucket) INCLUDE (mode, count, total_duration_ms);
      CREATE INDEX event_rollups_agent ON event_rollups (agent_name, bucket) INCLUDE (control_id, mode, count, total_duration_ms);
    `,
  },
  {
    version: 5,
    name: 'counters of rate and budget controls, shared by replicas',
    // One row per counter and key, locked by counter_take for the check and the update
    // of one step (see store/postgres/counters.ts for the window arithmetic).
    sql: `
      CREATE TABLE counters (
        counter TEXT NOT NULL,
        key TEXT NOT NULL,
        control_id BIGINT NOT NULL,
        kind TEXT NOT NULL,
        window_ms DOUBLE PRECISION NOT NULL,
        max DOUBLE PRECISION NOT NULL,
        buckets BIGINT[] NOT NULL,
        sums DOUBLE PRECISION[] NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (counter, key)
      );
      CREATE INDEX counters_expiry ON counters (expires_at);
      CREATE FUNCTION counter_take(
        p_counter TEXT, p_key TEXT, p_control BIGINT, p_kind TEXT, p_window DOUBLE PRECISION,
        p_now DOUBLE PRECISION, p_amount DOUBLE PRECISION, p_max DOUBLE PRECISION,
        p_always BOOLEAN, p_allow_new BOOLEAN,
        OUT used DOUBLE PRECISION, OUT over BOOLEAN)
      LANGUAGE plpgsql AS $fn$
      DECLARE
        width DOUBLE PRECISION := p_window / 60;
        cur BIGINT := floor(p_now / width);
        b BIGINT[];
        s DOUBLE PRECISION[];
        w DOUBLE PRECISION;
        nb BIGINT[] := '{}';
        ns DOUBLE PRECISION[] := '{}';
        total DOUBLE PRECISION := 0;
        i INT;
      BEGIN
        SELECT c.buckets, c.sums, c.window_ms INTO b, s, w FROM counters c
          WHERE c.counter = p_counter AND c.key = p_key FOR UPDATE;
        IF NOT FOUND THEN
          IF NOT p_allow_new THEN
            RAISE EXCEPTION 'too many distinct keys counted; this key cannot be counted';
          END IF;
          INSERT INTO counters (counter, key, control_id, kind, window_ms, max, buckets, sums, expires_at)
            VALUES (p_counter, p_key, p_control, p_kind, p_window, p_max, '{}', '{}', 0)
            ON CONFLICT (counter, key) DO NOTHING;
          SELECT c.buckets, c.sums, c.window_ms INTO b, s, w FROM counters c
            WHERE c.counter = p_counter AND c.key = p_key FOR UPDATE;
        END IF;
        IF w <> p_window THEN
          b := '{}';
          s := '{}';
        END IF;
        -- A replica whose clock is behind counts into the newest bucket.
        IF cardinality(b) > 0 AND b[cardinality(b)] > cur THEN
          cur := b[cardinality(b)];
        END IF;
        FOR i IN 1 .. coalesce(cardinality(b), 0) LOOP
          IF b[i] >= cur - 60 THEN
            nb := nb || b[i];
            ns := ns || s[i];
            total := total + s[i];
          END IF;
        END LOOP;
        IF p_always OR total + p_amount <= p_max THEN
          IF cardinality(nb) > 0 AND nb[cardinality(nb)] = cur THEN
            ns[cardinality(ns)] := ns[cardinality(ns)] + p_amount;
          ELSE
            nb := nb || cur;
            ns := ns || p_amount;
          END IF;
          used := total + p_amount;
          over := used > p_max;
        ELSE
          used := total;
          over := true;
        END IF;
        UPDATE counters SET buckets = nb, sums = ns, window_ms = p_window, max = p_max,
          expires_at = (coalesce(nb[cardinality(nb)], cur) + 61) * width
          WHERE counter = p_counter AND key = p_key;
      END
      $fn$;
    `,
  },
  {
    version: 6,
    name: 'counters: the steps of one key counted in one statement, with leases',
    // Adds the lease columns and defines counter_take_leased (store/postgres/counter-take-leased.ts:
    // the steps of one key decided in one statement, with leases). The text is the current
    // definition; migration 7 defines it again for databases that ran the first one.
    // counter_take (migration 5) stays for replicas of the earlier version during an upgrade.
    sql: `
      ALTER TABLE counters ADD COLUMN leased DOUBLE PRECISION NOT NULL DEFAULT 0;
      ALTER TABLE counters ADD COLUMN lease_until DOUBLE PRECISION NOT NULL DEFAULT 0;
      ${COUNTER_TAKE_LEASED}
    `,
  },
  {
    version: 7,
    name: 'counters: a lease no longer moves the window of a key forward',
    // The first counter_take_leased took the newest bucket, a lease's included, as the
    // time: a lease goes into the bucket of its end, so the steps after it dropped buckets
    // still inside the window and could pass the limit. The key's clock is now its latest
    // step's time, in a column of its own.
    sql: `
      ALTER TABLE counters ADD COLUMN clock DOUBLE PRECISION NOT NULL DEFAULT 0;
      ${COUNTER_TAKE_LEASED}
    `,
  },
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
    sql: SESSION_PING,
  },
];
