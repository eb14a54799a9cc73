/**
 * The definition of `session_begin_steps` (migration 14): counts the steps of existing
 * sessions (a session idle since p_expired starts a new epoch) and creates new ones when
 * session_count has room for all of them (p_max at most): a batch whose new sessions do
 * not fit, or finds session_count's row taken by another statement, creates none, and
 * those steps are begun one by one (BEGIN_STEP in sessions.ts), which fills the room left;
 * so are the steps of new sessions one of which another statement created meanwhile or a
 * prune is deleting, their slots given back. Answers each session begun with its epoch, the
 * time its epoch began (first_seen) and its labels; a session that got no row is not in the
 * answer. The number alone does not name an epoch: a session deleted by a prune and begun
 * again under its id starts at epoch 0 again (migration 21, sessions.ts ADD_LABELS).
 *
 * Three statements since migration 20, each reading anew: the existing sessions' rows are
 * locked in key order, then counted and their labels read (after every label committed
 * while the rows were waited for), then the new sessions take their slots and are created
 * in a subtransaction. Created by one statement, a new session unseen when it began but
 * created and then deleted by a prune meanwhile was inserted while the batch held the
 * count's row, waiting for the prune, which waits for that row next: a deadlock failing
 * every step of the batch.
 *
 * A function rather than a statement sent as text, for its plan: PostgreSQL plans a
 * prepared statement anew on every call while it judges the parameters matter (about
 * 0.4 ms here, several times the statement's own work); the function's plan is made once
 * per connection (plan_cache_mode), and its commit does not wait for the WAL flush.
 * A module of its own, so that the migrations and the store (session-steps.ts) share one
 * text without importing each other.
 */
export const SESSION_BEGIN_STEPS = `
  CREATE OR REPLACE FUNCTION session_begin_steps(
    p_agents TEXT[], p_ids TEXT[], p_steps BIGINT[], p_now DOUBLE PRECISION, p_expired DOUBLE PRECISION, p_max BIGINT)
  RETURNS TABLE (began_agent TEXT, began_session TEXT, began_epoch INTEGER, began_since DOUBLE PRECISION, began_labels TEXT[])
  LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
  DECLARE
    v_agents TEXT[];
    v_ids TEXT[];
    v_steps BIGINT[];
  BEGIN
    -- Local to this transaction: see store/postgres/session-steps.ts.
    PERFORM set_config('synchronous_commit', 'off', true);
    -- Locked, in key order: a row a prune is deleting is waited for and, once the prune
    -- commits, is not here, so its session is new again and takes a slot (read without the
    -- lock, it was counted as existing and inserted anew without one). NO KEY UPDATE: a
    -- label statement holding the row (FOR KEY SHARE, sessions.ts ADD_LABELS) is not waited for.
    SELECT array_agg(h.agent_name), array_agg(h.session_id) INTO v_agents, v_ids FROM (
      SELECT s.agent_name, s.session_id FROM sessions s JOIN unnest(p_agents, p_ids) AS u(agent_name, session_id)
        ON s.agent_name = u.agent_name AND s.session_id = u.session_id
      ORDER BY s.agent_name, s.session_id FOR NO KEY UPDATE OF s) h;
    -- The sessions held above (their rows locked: nothing to wait for).
    RETURN QUERY
    WITH up AS (
      UPDATE sessions s SET
        epoch = CASE WHEN s.last_seen <= p_expired THEN s.epoch + 1 ELSE s.epoch END,
        first_seen = CASE WHEN s.last_seen <= p_expired THEN p_now ELSE s.first_seen END,
        steps = CASE WHEN s.last_seen <= p_expired THEN i.steps ELSE s.steps + i.steps END,
        last_seen = GREATEST(s.last_seen, p_now)
      FROM unnest(p_agents, p_ids, p_steps) AS i(agent_name, session_id, steps)
      WHERE s.agent_name = i.agent_name AND s.session_id = i.session_id
        AND EXISTS (SELECT 1 FROM unnest(v_agents, v_ids) AS h(agent_name, session_id) WHERE h.agent_name = i.agent_name AND h.session_id = i.session_id)
      RETURNING s.agent_name, s.session_id, s.epoch, s.first_seen
    )
    SELECT b.agent_name, b.session_id, b.epoch, b.first_seen, coalesce((SELECT array_agg(l.label) FROM session_labels l
      WHERE l.agent_name = b.agent_name AND l.session_id = b.session_id AND l.epoch = b.epoch), '{}')
    FROM up b;
    -- The new sessions: the steps' sessions with no row held above.
    SELECT array_agg(u.agent_name), array_agg(u.session_id), array_agg(u.steps)
      INTO v_agents, v_ids, v_steps
      FROM unnest(p_agents, p_ids, p_steps) AS u(agent_name, session_id, steps)
      WHERE NOT EXISTS (SELECT 1 FROM unnest(v_agents, v_ids) AS h(agent_name, session_id) WHERE h.agent_name = u.agent_name AND h.session_id = u.session_id);
    IF v_agents IS NULL THEN
      RETURN;
    END IF;
    BEGIN
      -- Not waited for while another statement holds the count's row (SKIP LOCKED): this one
      -- holds its sessions' rows, and the other may be creating a session this one saw
      -- created only after it began, whose row it then waits for, a deadlock failing every
      -- step of one batch. The new sessions are then begun one by one (BEGIN_STEP in
      -- sessions.ts), as when there is no room for them.
      UPDATE session_count c SET n = c.n + cardinality(v_agents)
        WHERE c.id = (SELECT k.id FROM session_count k WHERE k.id = 1 FOR UPDATE SKIP LOCKED)
          AND c.n + cardinality(v_agents) <= p_max;
      IF NOT FOUND THEN
        RETURN;
      END IF;
      -- A new session created by another statement since this one began is not waited for
      -- (NOWAIT), nor created: a prune deleting it (FOR UPDATE, which refuses this lock) waits
      -- for the count's row next, and a batch holding it may be waiting for one of this
      -- one's rows. The slot is given back and these steps are begun one by one.
      PERFORM 1 FROM sessions s JOIN unnest(v_agents, v_ids) AS u(agent_name, session_id)
        ON s.agent_name = u.agent_name AND s.session_id = u.session_id FOR KEY SHARE OF s NOWAIT;
      IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'unique_violation';
      END IF;
      RETURN QUERY
      WITH created AS (
        INSERT INTO sessions AS s (agent_name, session_id, epoch, first_seen, last_seen, steps)
          SELECT u.agent_name, u.session_id, 0, p_now, p_now, u.steps FROM unnest(v_agents, v_ids, v_steps) AS u(agent_name, session_id, steps)
        ON CONFLICT (agent_name, session_id) DO NOTHING
        RETURNING s.agent_name, s.session_id, s.epoch, s.first_seen
      )
      SELECT b.agent_name, b.session_id, b.epoch, b.first_seen, coalesce((SELECT array_agg(l.label) FROM session_labels l
        WHERE l.agent_name = b.agent_name AND l.session_id = b.session_id AND l.epoch = b.epoch), '{}')
      FROM created b;
    EXCEPTION WHEN unique_violation OR lock_not_available THEN
      NULL;
    END;
  END
  $fn$;
`;

/**
 * The definition of `session_begin_step` (migration 19): one step alone (a step whose new
 * session a batch had no room for, or found created meanwhile). An existing session counts
 * the step under its row's lock, starting a new epoch when it was idle since p_expired; a
 * new one takes a slot in session_count (refused at p_max: no row comes back, unless the
 * session was created while this step waited for the count's row, which it then counts on)
 * and is created. It never waits on a session's row while it holds the count's row: a prune
 * holds the expired rows it deletes and waits for the count's row, and a batch holding this
 * session's row may be waiting on one of those, a deadlock failing one of the three. So the
 * slot is taken and the session created ON CONFLICT DO NOTHING in a subtransaction; when
 * the session was created by another statement since this one looked (a step of it on
 * another replica), that subtransaction is rolled back, giving back the slot and the
 * count's row, and the step counts the session's row as an existing one's. Waiting for an
 * uncommitted insert of the session is no such wait: whoever creates a session holds the
 * count's row until it commits, so this function cannot hold that row then. Waiting for a
 * prune deleting the session is one (the prune waits for the count's row next): a session
 * created meanwhile may be idle past the prune's limit at once (its step's time read before
 * it waited), so the row is first locked FOR KEY SHARE NOWAIT, which a prune's FOR UPDATE
 * refuses and a step's FOR NO KEY UPDATE does not; refused, the slot is given back as well,
 * and the UPDATE waits for the prune holding nothing (migration 20; before, the insert
 * waited for the prune and one of the two failed as a deadlock's victim). Answers the epoch
 * with the time it began, as session_begin_steps does.
 */
export const SESSION_BEGIN_STEP = `
  CREATE OR REPLACE FUNCTION session_begin_step(
    p_agent TEXT, p_id TEXT, p_now DOUBLE PRECISION, p_expired DOUBLE PRECISION, p_max BIGINT)
  RETURNS TABLE (began_epoch INTEGER, began_since DOUBLE PRECISION, began_labels TEXT[])
  LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
  DECLARE
    v_epoch INTEGER;
    v_since DOUBLE PRECISION;
  BEGIN
    -- Local to this transaction: see store/postgres/session-steps.ts.
    PERFORM set_config('synchronous_commit', 'off', true);
    LOOP
      -- Each statement reads anew: a session created since the last turn is found here.
      UPDATE sessions s SET
        epoch = CASE WHEN s.last_seen <= p_expired THEN s.epoch + 1 ELSE s.epoch END,
        first_seen = CASE WHEN s.last_seen <= p_expired THEN p_now ELSE s.first_seen END,
        steps = CASE WHEN s.last_seen <= p_expired THEN 1 ELSE s.steps + 1 END,
        last_seen = GREATEST(s.last_seen, p_now)
      WHERE s.agent_name = p_agent AND s.session_id = p_id
      RETURNING s.epoch, s.first_seen INTO v_epoch, v_since;
      EXIT WHEN FOUND;
      BEGIN
        UPDATE session_count SET n = n + 1 WHERE id = 1 AND n < p_max;
        IF NOT FOUND THEN
          -- No room for a new session. But this UPDATE may have waited for the statement that
          -- took the last slot for this very session (a step of it on another replica): then
          -- the session is held, and its step is no new session the bound refuses.
          PERFORM 1 FROM sessions s WHERE s.agent_name = p_agent AND s.session_id = p_id;
          IF NOT FOUND THEN
            RETURN;
          END IF;
          RAISE EXCEPTION USING ERRCODE = 'unique_violation';
        END IF;
        -- Created by another statement since the UPDATE above, and perhaps being deleted by a
        -- prune that waits for the count's row (NOWAIT: the prune holds it FOR UPDATE).
        PERFORM 1 FROM sessions s WHERE s.agent_name = p_agent AND s.session_id = p_id FOR KEY SHARE NOWAIT;
        IF NOT FOUND THEN
          INSERT INTO sessions AS s (agent_name, session_id, epoch, first_seen, last_seen, steps)
            VALUES (p_agent, p_id, 0, p_now, p_now, 1)
          ON CONFLICT (agent_name, session_id) DO NOTHING
          RETURNING s.epoch, s.first_seen INTO v_epoch, v_since;
          EXIT WHEN FOUND;
        END IF;
        -- The slot is given back, and the UPDATE above finds the session, or waits for the
        -- prune (holding nothing) and finds it gone.
        RAISE EXCEPTION USING ERRCODE = 'unique_violation';
      EXCEPTION WHEN unique_violation OR lock_not_available THEN
        NULL;
      END;
    END LOOP;
    RETURN QUERY SELECT v_epoch, v_since, coalesce((SELECT array_agg(l.label) FROM session_labels l
      WHERE l.agent_name = p_agent AND l.session_id = p_id AND l.epoch = v_epoch), '{}');
  END
  $fn$;
`;
