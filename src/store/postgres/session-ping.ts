/**
 * The definitions behind a replica's cached sessions (migration 15, session-cache.ts), in a
 * module of their own so that the migrations and the store share one text without
 * importing each other (as session-begin-steps.ts).
 *
 * `session_cachers`: each replica that answers steps from its cache, and until when
 * (database clock, epoch ms) it may do so on the strength of the pings it has heard back.
 * A replica that adds a label waits, after its commit, for every replica listed here to
 * drop the session from its cache, or for its time here to pass.
 *
 * `session_ping` writes what a replica counted in memory (steps and last-seen times of
 * cached sessions, added under the rows' locks taken in key order, as session_begin_steps
 * takes them, so the two cannot deadlock), renews the replica's time in session_cachers
 * and sends the ping, all in one transaction: the ping is delivered at its commit, and a
 * replica that hears it back has heard every notification committed before it. Committed
 * without waiting for the WAL flush, as the steps of session_begin_steps are.
 */
export const SESSION_CACHE_CHANNEL = 'guardctl_sessions';

export const SESSION_CACHERS = `
  CREATE TABLE session_cachers (replica TEXT PRIMARY KEY, expires_at DOUBLE PRECISION NOT NULL);
`;

/** The function alone (migration 17 defines it again: its rows locked FOR NO KEY UPDATE, as session_begin_steps locks them). */
export const SESSION_PING = `
  CREATE OR REPLACE FUNCTION session_ping(
    p_agents TEXT[], p_ids TEXT[], p_epochs INTEGER[], p_steps BIGINT[], p_seen DOUBLE PRECISION[],
    p_replica TEXT, p_valid_ms DOUBLE PRECISION, p_ping TEXT)
  RETURNS VOID LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM 1 FROM sessions s JOIN unnest(p_agents, p_ids) AS u(agent_name, session_id)
      ON s.agent_name = u.agent_name AND s.session_id = u.session_id
      ORDER BY s.agent_name, s.session_id FOR NO KEY UPDATE OF s;
    UPDATE sessions s SET steps = s.steps + u.steps, last_seen = GREATEST(s.last_seen, u.seen)
      FROM unnest(p_agents, p_ids, p_epochs, p_steps, p_seen) AS u(agent_name, session_id, epoch, steps, seen)
      WHERE s.agent_name = u.agent_name AND s.session_id = u.session_id AND s.epoch = u.epoch;
    INSERT INTO session_cachers (replica, expires_at) VALUES (p_replica, extract(epoch FROM clock_timestamp()) * 1000 + p_valid_ms)
      ON CONFLICT (replica) DO UPDATE SET expires_at = excluded.expires_at;
    PERFORM pg_notify('${SESSION_CACHE_CHANNEL}', p_ping);
  END
  $fn$;
`;
