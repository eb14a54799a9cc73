/**
 * The PostgreSQL schema, the same model as SQLite's in PostgreSQL's dialect. Ordered and
 * append-only like the SQLite list. Event stats read only the covering indexes (INCLUDE),
 * so they never touch the table once autovacuum has marked the pages all-visible.
 */
import type { Migration } from '../migrations.js';

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
    // counter_take_leased decides a batch of steps of one counter and key, in arrival
    // order, under one lock of the key's row: each step's answer is what counter_take
    // (migration 5) would have answered had the steps come one by one, and another
    // replica's steps wait for the lock as before.
    // A step may also release what its replica leased before (`p_release`, the part it
    // did not use in `p_unused`, taken back from the bucket the lease went into) and ask
    // for a lease (`p_ask`): room under the limit counted now, which that replica then
    // hands out to its next steps without a round trip (server/leased-counts.ts). A lease
    // is counted like the steps it stands for, so the sum never passes `max`; it goes into
    // the bucket of the lease's end, so a step taken from it is remembered at least a
    // window long; it is at most a quarter of the room left, so leases shrink as the limit
    // nears. A step that only other replicas' unused leases keep out (`p_defer`) is not
    // refused: it is answered `retry_at` the leases' end, and counted when they have been
    // returned or have ended (a lease past its end counts as spent).
    // The window's sum is summed once per statement (again only when buckets leave the
    // window or a lease is taken back from an older bucket), left to right with the newest
    // bucket last, so every total is the number a full sum gives.
    // The transaction commits without waiting for the WAL flush (synchronous_commit off,
    // for this transaction only): the row lock is held through the commit, so a flush per
    // statement (milliseconds on an ordinary disk) would bound a busy key's rate.
    // Atomicity and isolation are unchanged, so replicas still count exactly; what a crash
    // of the database server can lose is the counts of the last moments (docs/evaluators.md).
    // counter_take (migration 5) stays for replicas of the earlier version during an upgrade.
    sql: `
      ALTER TABLE counters ADD COLUMN leased DOUBLE PRECISION NOT NULL DEFAULT 0;
      ALTER TABLE counters ADD COLUMN lease_until DOUBLE PRECISION NOT NULL DEFAULT 0;

      CREATE FUNCTION counter_take_leased(
        p_counter TEXT, p_key TEXT, p_control BIGINT, p_kind TEXT, p_window DOUBLE PRECISION,
        p_now DOUBLE PRECISION[], p_amount DOUBLE PRECISION[], p_max DOUBLE PRECISION[],
        p_always BOOLEAN[], p_allow_new BOOLEAN, p_defer BOOLEAN[],
        p_release DOUBLE PRECISION[], p_unused DOUBLE PRECISION[], p_release_bucket BIGINT[],
        p_ask DOUBLE PRECISION[], p_lease_ms DOUBLE PRECISION,
        OUT used DOUBLE PRECISION[], OUT over BOOLEAN[], OUT granted DOUBLE PRECISION[],
        OUT lease_bucket BIGINT[], OUT retry_at DOUBLE PRECISION[])
      LANGUAGE plpgsql AS $fn$
      DECLARE
        width DOUBLE PRECISION := p_window / 60;
        cur BIGINT;
        b BIGINT[];
        s DOUBLE PRECISION[];
        w DOUBLE PRECISION;
        lsd DOUBLE PRECISION;
        lsd_until DOUBLE PRECISION;
        n INT;
        before_newest DOUBLE PRECISION;
        total DOUBLE PRECISION;
        a DOUBLE PRECISION;
        g DOUBLE PRECISION;
        lb BIGINT;
        first INT;
        i INT;
        j INT;
        step_over BOOLEAN;
        step_retry DOUBLE PRECISION;
      BEGIN
        -- Local to this transaction: see the comment above.
        PERFORM set_config('synchronous_commit', 'off', true);
        used := '{}';
        over := '{}';
        granted := '{}';
        lease_bucket := '{}';
        retry_at := '{}';
        SELECT c.buckets, c.sums, c.window_ms, c.leased, c.lease_until INTO b, s, w, lsd, lsd_until FROM counters c
          WHERE c.counter = p_counter AND c.key = p_key FOR UPDATE;
        IF NOT FOUND THEN
          IF NOT p_allow_new THEN
            RAISE EXCEPTION 'too many distinct keys counted; this key cannot be counted';
          END IF;
          INSERT INTO counters (counter, key, control_id, kind, window_ms, max, buckets, sums, expires_at)
            VALUES (p_counter, p_key, p_control, p_kind, p_window, p_max[1], '{}', '{}', 0)
            ON CONFLICT (counter, key) DO NOTHING;
          SELECT c.buckets, c.sums, c.window_ms, c.leased, c.lease_until INTO b, s, w, lsd, lsd_until FROM counters c
            WHERE c.counter = p_counter AND c.key = p_key FOR UPDATE;
        END IF;
        IF w <> p_window THEN
          b := '{}';
          s := '{}';
          lsd := 0;
        END IF;
        n := cardinality(b);
        before_newest := NULL;
        FOR j IN 1 .. cardinality(p_amount) LOOP
          a := p_amount[j];
          cur := floor(p_now[j] / width);
          -- A replica whose clock is behind counts into the newest bucket.
          IF n > 0 AND b[n] > cur THEN
            cur := b[n];
          END IF;
          IF n > 0 AND b[1] < cur - 60 THEN
            first := 1;
            WHILE first <= n AND b[first] < cur - 60 LOOP
              first := first + 1;
            END LOOP;
            b := b[first:];
            s := s[first:];
            n := cardinality(b);
            before_newest := NULL;
          END IF;
          IF p_release[j] > 0 THEN
            lsd := greatest(lsd - p_release[j], 0);
            IF p_unused[j] > 0 THEN
              FOR i IN 1 .. n LOOP
                IF b[i] = p_release_bucket[j] THEN
                  s[i] := greatest(s[i] - p_unused[j], 0);
                  IF i < n THEN before_newest := NULL; END IF;
                  EXIT;
                END IF;
              END LOOP;
            END IF;
          END IF;
          IF lsd_until <= p_now[j] THEN
            lsd := 0;
          END IF;
          IF before_newest IS NULL THEN
            before_newest := 0;
            FOR i IN 1 .. n - 1 LOOP
              before_newest := before_newest + s[i];
            END LOOP;
          END IF;
          IF n > 0 THEN total := before_newest + s[n]; ELSE total := 0; END IF;
          step_retry := 0;
          step_over := false;
          IF a = 0 AND p_release[j] > 0 THEN
            -- A release alone: nothing to decide.
            used := used || total;
          ELSIF total + a <= p_max[j] OR p_always[j] THEN
            IF n > 0 AND b[n] = cur THEN
              s[n] := s[n] + a;
            ELSE
              before_newest := total;
              b := b || cur;
              s := s || a;
              n := n + 1;
            END IF;
            step_over := total + a > p_max[j];
            IF step_over AND p_defer[j] AND lsd > 0 AND total - lsd + a <= p_max[j] THEN
              -- Only unused leases keep it out: take it back and let it wait for them.
              s[n] := s[n] - a;
              step_retry := lsd_until;
              used := used || total;
            ELSE
              total := total + a;
              used := used || total;
            END IF;
          ELSIF p_defer[j] AND lsd > 0 AND total - lsd + a <= p_max[j] THEN
            step_over := true;
            step_retry := lsd_until;
            used := used || total;
          ELSE
            step_over := true;
            used := used || total;
          END IF;
          over := over || step_over;
          retry_at := retry_at || step_retry;
          g := 0;
          lb := 0;
          IF p_ask[j] > 0 AND NOT step_over THEN
            g := least(p_ask[j], floor((p_max[j] - total) / 4));
            IF g > 0 THEN
              lb := greatest(floor((p_now[j] + p_lease_ms) / width), cur);
              IF n > 0 AND b[n] = lb THEN
                s[n] := s[n] + g;
              ELSE
                before_newest := total;
                b := b || lb;
                s := s || g;
                n := n + 1;
              END IF;
              total := total + g;
              lsd := lsd + g;
              lsd_until := greatest(lsd_until, p_now[j] + p_lease_ms);
            ELSE
              g := 0;
            END IF;
          END IF;
          granted := granted || g;
          lease_bucket := lease_bucket || lb;
        END LOOP;
        UPDATE counters SET buckets = b, sums = s, window_ms = p_window, max = p_max[cardinality(p_max)],
          leased = lsd, lease_until = lsd_until,
          expires_at = (coalesce(b[n], cur) + 61) * width
          WHERE counter = p_counter AND key = p_key;
      END
      $fn$;
    `,
  },
];
