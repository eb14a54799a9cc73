/**
 * The SQLite schema as an ordered list of migrations. A migration, once released, is
 * never edited: later changes append a new one. Event times are INTEGER epoch ms so that
 * range scans compare integers; `outcome` (0 non-match, 1 match, 2 error) is stored so
 * the stats indexes can cover the stats query completely.
 */
import type { Migration } from '../migrations.js';

export const sqliteMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'controls, agents, links, revision, events',
    sql: `
      CREATE TABLE controls (
        control_id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL UNIQUE,
        enabled INTEGER NOT NULL DEFAULT 1,
        data TEXT,
        managed_by TEXT,
        source TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE agents (
        agent_name TEXT PRIMARY KEY,
        agent_description TEXT,
        agent_version TEXT,
        steps TEXT NOT NULL DEFAULT '[]',
        metadata TEXT,
        managed_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE control_links (
        agent_name TEXT NOT NULL REFERENCES agents (agent_name) ON DELETE CASCADE,
        control_id INTEGER NOT NULL REFERENCES controls (control_id) ON DELETE CASCADE,
        PRIMARY KEY (agent_name, control_id)
      ) WITHOUT ROWID;
      CREATE INDEX control_links_control ON control_links (control_id);
      CREATE TABLE store_revision (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        value INTEGER NOT NULL
      );
      INSERT INTO store_revision (id, value) VALUES (1, 0);
      CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        control_execution_id TEXT NOT NULL,
        trace_id TEXT NOT NULL,
        span_id TEXT NOT NULL,
        agent_name TEXT NOT NULL,
        control_id INTEGER NOT NULL,
        control_name TEXT NOT NULL,
        check_stage TEXT NOT NULL,
        applies_to TEXT NOT NULL,
        action TEXT NOT NULL,
        matched INTEGER NOT NULL,
        outcome INTEGER NOT NULL,
        confidence REAL NOT NULL,
        ts INTEGER NOT NULL,
        execution_duration_ms REAL NOT NULL,
        evaluator_name TEXT,
        selector_path TEXT,
        error_message TEXT,
        metadata TEXT
      );
      -- Queries newest first, and retention.
      CREATE INDEX events_ts ON events (ts);
      -- Per-agent queries and stats: appended at the end of each agent's range, and it
      -- covers the per-agent stats query (a range scan of one agent's window).
      CREATE INDEX events_agent_ts ON events (agent_name, ts, control_id, outcome, action, execution_duration_ms);
      -- Stats: each (control, outcome, action) is one index range seek from the window's
      -- start, and the index alone answers count and duration sum (no table reads, no sort).
      CREATE INDEX events_stats ON events (control_id, outcome, action, ts, execution_duration_ms);
      -- No index on trace_id: trace ids are random, so such an index dirties one page per
      -- event and more than halves ingest. Trace lookups scan (bounded by a time range when given).
    `,
  },
  {
    version: 2,
    name: 'recorded steps (replay)',
    sql: `
      CREATE TABLE recorded_steps (
        id INTEGER PRIMARY KEY,
        ts INTEGER NOT NULL,
        agent_name TEXT NOT NULL,
        stage TEXT NOT NULL,
        step TEXT NOT NULL,
        decision TEXT NOT NULL
      );
      CREATE INDEX recorded_steps_ts ON recorded_steps (ts);
      CREATE INDEX recorded_steps_agent ON recorded_steps (agent_name, id);
    `,
  },
  {
    version: 3,
    name: 'non-match rollups',
    // Non-matches are counted per minute instead of stored one row each (see
    // src/observability). Existing non-match rows are folded in, so stats of an upgraded
    // database keep counting them; the rows themselves stay, like sampled ones.
    sql: `
      CREATE TABLE event_rollups (
        bucket INTEGER NOT NULL,
        agent_name TEXT NOT NULL,
        control_id INTEGER NOT NULL,
        control_name TEXT NOT NULL,
        check_stage TEXT NOT NULL,
        applies_to TEXT NOT NULL,
        evaluator_name TEXT NOT NULL,
        count INTEGER NOT NULL,
        total_duration_ms REAL NOT NULL,
        PRIMARY KEY (bucket, agent_name, control_id, control_name, check_stage, applies_to, evaluator_name)
      ) WITHOUT ROWID;
      -- Stats by control and by agent read only these covering indexes.
      CREATE INDEX event_rollups_control ON event_rollups (control_id, bucket, count, total_duration_ms);
      CREATE INDEX event_rollups_agent ON event_rollups (agent_name, bucket, control_id, count, total_duration_ms);
      INSERT INTO event_rollups
        SELECT (ts / 60000) * 60000, agent_name, control_id, control_name, check_stage, applies_to,
          coalesce(evaluator_name, ''), count(*), total(execution_duration_ms)
        FROM events WHERE outcome = 0
        GROUP BY 1, 2, 3, 4, 5, 6, 7;
    `,
  },
  {
    version: 4,
    name: 'history and audit; shadow mode in events and rollups; set_revision',
    // Every write to a control, agent or link is an entry of change_log, in the write's own
    // transaction. The controls an upgraded database already holds get one entry each, so
    // their history starts from what they are. Events gain the control's mode (also in
    // `outcome`: + 3 for shadow, see records.ts), the set revision and the shadow-report
    // example; rollups gain the mode in their key, so the table is rebuilt with it.
    sql: `
      CREATE TABLE change_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        revision INTEGER NOT NULL,
        ts INTEGER NOT NULL,
        actor TEXT NOT NULL,
        source TEXT NOT NULL,
        kind TEXT NOT NULL,
        op TEXT NOT NULL,
        control_id INTEGER,
        control_name TEXT,
        agent_name TEXT,
        before TEXT,
        after TEXT,
        note TEXT
      );
      CREATE INDEX change_log_control ON change_log (control_id, id);
      CREATE INDEX change_log_ts ON change_log (ts);
      CREATE INDEX change_log_actor ON change_log (actor, id);
      INSERT INTO change_log (revision, ts, actor, source, kind, op, control_id, control_name, agent_name, before, after, note)
        SELECT (SELECT value FROM store_revision WHERE id = 1),
          CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'upgrade',
          CASE WHEN managed_by LIKE 'watch:%' THEN 'watch' WHEN managed_by IS NOT NULL THEN 'apply' ELSE 'api' END,
          'control', 'create', control_id, name, NULL, NULL,
          json_object('name', name, 'enabled', json(CASE enabled WHEN 1 THEN 'true' ELSE 'false' END),
            'data', CASE WHEN data IS NULL THEN NULL ELSE json_set(data, '$.enabled', json(CASE enabled WHEN 1 THEN 'true' ELSE 'false' END)) END,
            'managed_by', managed_by, 'source', source),
          'the control as it was when its history began (upgrade)'
        FROM controls ORDER BY control_id;
      ALTER TABLE events ADD COLUMN mode TEXT NOT NULL DEFAULT 'enforce';
      ALTER TABLE events ADD COLUMN set_revision INTEGER;
      ALTER TABLE events ADD COLUMN example TEXT;
      CREATE TABLE event_rollups_by_mode (
        bucket INTEGER NOT NULL,
        agent_name TEXT NOT NULL,
        control_id INTEGER NOT NULL,
        control_name TEXT NOT NULL,
        check_stage TEXT NOT NULL,
        applies_to TEXT NOT NULL,
        evaluator_name TEXT NOT NULL,
        mode TEXT NOT NULL,
        count INTEGER NOT NULL,
        total_duration_ms REAL NOT NULL,
        PRIMARY KEY (bucket, agent_name, control_id, control_name, check_stage, applies_to, evaluator_name, mode)
      ) WITHOUT ROWID;
      INSERT INTO event_rollups_by_mode
        SELECT bucket, agent_name, control_id, control_name, check_stage, applies_to, evaluator_name, 'enforce', count, total_duration_ms
        FROM event_rollups;
      DROP TABLE event_rollups;
      ALTER TABLE event_rollups_by_mode RENAME TO event_rollups;
      CREATE INDEX event_rollups_control ON event_rollups (control_id, bucket, mode, count, total_duration_ms);
      CREATE INDEX event_rollups_agent ON event_rollups (agent_name, bucket, control_id, mode, count, total_duration_ms);
    `,
  },
  {
    version: 5,
    name: 'counters of rate and budget controls with long windows',
    // One row per counter and key: the sums of its non-empty buckets (JSON arrays).
    // expires_at (epoch ms) is when the key goes idle; rows past it are deleted.
    sql: `
      CREATE TABLE counters (
        counter TEXT NOT NULL,
        key TEXT NOT NULL,
        control_id INTEGER NOT NULL,
        kind TEXT NOT NULL,
        window_ms INTEGER NOT NULL,
        max REAL NOT NULL,
        buckets TEXT NOT NULL,
        sums TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        PRIMARY KEY (counter, key)
      ) WITHOUT ROWID;
      CREATE INDEX counters_expiry ON counters (expires_at);
    `,
  },
  {
    version: 6,
    name: 'sessions and their labels; the session of recorded steps',
    // One row per agent and session (times in epoch ms), one per label with the control and
    // step that added it. The server keeps sessions in memory and writes them through.
    sql: `
      CREATE TABLE sessions (
        agent_name TEXT NOT NULL,
        session_id TEXT NOT NULL,
        first_seen INTEGER NOT NULL,
        last_seen INTEGER NOT NULL,
        steps INTEGER NOT NULL,
        PRIMARY KEY (agent_name, session_id)
      ) WITHOUT ROWID;
      CREATE INDEX sessions_last_seen ON sessions (last_seen);
      CREATE TABLE session_labels (
        agent_name TEXT NOT NULL,
        session_id TEXT NOT NULL,
        label TEXT NOT NULL,
        control_id INTEGER NOT NULL,
        control_name TEXT NOT NULL,
        stage TEXT NOT NULL,
        step_name TEXT NOT NULL,
        added_at INTEGER NOT NULL,
        PRIMARY KEY (agent_name, session_id, label)
      ) WITHOUT ROWID;
      ALTER TABLE recorded_steps ADD COLUMN session_id TEXT;
    `,
  },
  {
    version: 7,
    name: 'approvals of asked steps',
    // Times are epoch ms. `seq` orders the approvals of one digest (the latest decides);
    // `used_at` is set by the one submission an approval or a denial answers.
    sql: `
      CREATE TABLE approvals (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        digest TEXT NOT NULL,
        status TEXT NOT NULL,
        agent_name TEXT NOT NULL,
        stage TEXT NOT NULL,
        step_type TEXT NOT NULL,
        step_name TEXT NOT NULL,
        control_id INTEGER NOT NULL,
        control_name TEXT NOT NULL,
        step TEXT NOT NULL,
        timeout_ms INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        decided_at INTEGER,
        decided_by TEXT,
        reason TEXT,
        used_at INTEGER
      );
      CREATE INDEX approvals_digest ON approvals (digest, seq);
      CREATE INDEX approvals_status ON approvals (status, seq);
    `,
  },
  {
    version: 8,
    name: 'agent labels and policies',
    // Policy membership is resolved when agents or policies are written (policy_members),
    // so building an agent's control set stays one indexed read: its links and its
    // policies' controls. Deleting an agent, a policy or a control cascades.
    sql: `
      ALTER TABLE agents ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
      CREATE TABLE policies (
        policy_id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL UNIQUE,
        description TEXT,
        agents TEXT NOT NULL,
        managed_by TEXT,
        source TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE policy_controls (
        policy_id INTEGER NOT NULL REFERENCES policies (policy_id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        control_id INTEGER NOT NULL REFERENCES controls (control_id) ON DELETE CASCADE,
        PRIMARY KEY (policy_id, control_id)
      ) WITHOUT ROWID;
      CREATE INDEX policy_controls_control ON policy_controls (control_id);
      CREATE TABLE policy_members (
        agent_name TEXT NOT NULL REFERENCES agents (agent_name) ON DELETE CASCADE,
        policy_id INTEGER NOT NULL REFERENCES policies (policy_id) ON DELETE CASCADE,
        PRIMARY KEY (agent_name, policy_id)
      ) WITHOUT ROWID;
      CREATE INDEX policy_members_policy ON policy_members (policy_id);
      ALTER TABLE change_log ADD COLUMN policy_id INTEGER;
      CREATE INDEX change_log_policy ON change_log (policy_id, id) WHERE policy_id IS NOT NULL;
    `,
  },
  {
    version: 9,
    name: 'the session of each event',
    // Unlike trace ids (one per request, so no index: see migration 1), a session's events
    // arrive over its whole life and share its index pages; the index is partial, so
    // sessionless events cost ingest nothing. It serves "follow one session" queries.
    sql: `
      ALTER TABLE events ADD COLUMN session_id TEXT;
      CREATE INDEX events_session ON events (session_id, ts) WHERE session_id IS NOT NULL;
    `,
  },
  {
    version: 10,
    name: 'pinned MCP servers',
    // The pinned document is one JSON text: the gateway reads it whole, nothing queries inside it.
    sql: `
      CREATE TABLE mcp_servers (
        mcp_server_id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL UNIQUE,
        document TEXT NOT NULL,
        managed_by TEXT,
        source TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 11,
    name: 'a control a policy binds cannot be deleted',
    // The stores refuse the delete first (409 bound_by_policy); this is the database's own
    // word for it, should any delete ever come another way. SQLite changes a foreign key
    // only by rebuilding the table.
    sql: `
      CREATE TABLE policy_controls_next (
        policy_id INTEGER NOT NULL REFERENCES policies (policy_id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        control_id INTEGER NOT NULL REFERENCES controls (control_id) ON DELETE RESTRICT,
        PRIMARY KEY (policy_id, control_id)
      ) WITHOUT ROWID;
      INSERT INTO policy_controls_next (policy_id, position, control_id) SELECT policy_id, position, control_id FROM policy_controls;
      DROP TABLE policy_controls;
      ALTER TABLE policy_controls_next RENAME TO policy_controls;
      CREATE INDEX policy_controls_control ON policy_controls (control_id);
    `,
  },
  {
    version: 12,
    name: 'what the question of an approval counted',
    // An approved step submitted again adds only what it counts beyond its question's
    // counts (counting/counted-already.ts); older questions have none (NULL).
    sql: `ALTER TABLE approvals ADD COLUMN counted TEXT;`,
  },
  {
    version: 13,
    name: 'when each kept key\'s counts began',
    // A key emptied by a window change and changed back before a restart holds none of a
    // question's counts (counting/memory-counters.ts); rows of before hold NULL: not known.
    sql: `ALTER TABLE counters ADD COLUMN since REAL;`,
  },
];
