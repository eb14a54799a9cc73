/**
 * The definition of `counter_take_leased`, the statement that counts the steps of one
 * counter and key for `consistency: exact` (store/postgres/counters.ts). Migration 6 first
 * defined it; migration 7 defines it again, as here, for databases that ran the earlier
 * definition. Both run this text, so there is one definition to read.
 *
 * It decides a batch of steps of one counter and key, in arrival order, under one lock of
 * the key's row: each step's answer is what the steps would have been answered one by one,
 * and another replica's steps wait for the lock.
 *
 * The window is 60 buckets of window/60 each, kept sorted. A step goes into the bucket of
 * its time; a key's clock (`clock`) is the latest time a step of it was counted at, and a
 * step whose time is behind it counts at that time instead of its own, so that it is not
 * forgotten early. Replicas time their steps on the database server's clock as they last
 * read it (counting/server-counters.ts), so their times differ by about a round trip, not
 * by how far their own clocks are apart. Buckets older than 60 before the clock's leave
 * the window.
 *
 * A step may also release what its replica leased before (`p_release`, the part it did not
 * use in `p_unused`, taken back from the bucket the lease went into) and ask for a lease
 * (`p_ask`): room under the limit counted now, which that replica then hands out to its
 * next steps without a round trip (counting/leased-counts.ts).
 * - A lease is counted like the steps it stands for, so the sum never passes `max`.
 * - It goes into the bucket of the lease's end, so a step taken from it is remembered at
 *   least a window long. That bucket may be ahead of every step's: it does not move the
 *   clock (the first definition took the newest bucket, a lease's included, for the time,
 *   and so dropped steps still inside the window: a later step could pass the limit).
 * - It is at most a quarter of the room left, so leases shrink as the limit nears.
 * - A step that only other replicas' unused leases keep out (`p_defer`) is not refused: it
 *   is answered `retry_at` the leases' end, and counted when they have been returned or
 *   have ended (a lease past its end counts as spent).
 *
 * The window's sum is summed once per statement, and again only when buckets leave the
 * window or an amount is added to or taken from a bucket other than the newest; it is summed
 * left to right with the newest bucket last, so every total is the number a full sum gives.
 *
 * The transaction commits without waiting for the WAL flush (synchronous_commit off, for
 * this transaction only): the row lock is held through the commit, so a flush per statement
 * (milliseconds on an ordinary disk) would bound a busy key's rate. Atomicity and isolation
 * are unchanged, so replicas still count exactly; what a crash of the database server can
 * lose is the counts of the last moments (docs/evaluators.md).
 */
export const COUNTER_TAKE_LEASED = `
  -- Adds p_amount to bucket p_bucket of the sorted buckets, inserting the bucket where it
  -- belongs; idx is its index. p_before is the sum of all buckets but the newest (null:
  -- unknown), p_total the sum of all before the add; before_newest is that of the result.
  CREATE OR REPLACE FUNCTION counter_bucket_add(
    p_b BIGINT[], p_s DOUBLE PRECISION[], p_bucket BIGINT, p_amount DOUBLE PRECISION,
    p_before DOUBLE PRECISION, p_total DOUBLE PRECISION,
    OUT b BIGINT[], OUT s DOUBLE PRECISION[], OUT idx INT, OUT before_newest DOUBLE PRECISION)
  LANGUAGE plpgsql IMMUTABLE AS $fn$
  DECLARE
    n INT := coalesce(cardinality(p_b), 0);
  BEGIN
    b := p_b;
    s := p_s;
    before_newest := p_before;
    idx := n;
    WHILE idx > 0 AND b[idx] > p_bucket LOOP
      idx := idx - 1;
    END LOOP;
    IF idx > 0 AND b[idx] = p_bucket THEN
      s[idx] := s[idx] + p_amount;
      IF idx < n THEN before_newest := NULL; END IF;
    ELSIF idx = n THEN
      b := b || p_bucket;
      s := s || p_amount;
      idx := n + 1;
      before_newest := p_total;
    ELSE
      b := b[1:idx] || p_bucket || b[idx + 1:n];
      s := s[1:idx] || p_amount || s[idx + 1:n];
      idx := idx + 1;
      before_newest := NULL;
    END IF;
  END
  $fn$;

  CREATE OR REPLACE FUNCTION counter_take_leased(
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
    clk DOUBLE PRECISION;
    n INT;
    idx INT;
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
    -- Local to this transaction: see store/postgres/counter-take-leased.ts.
    PERFORM set_config('synchronous_commit', 'off', true);
    used := '{}';
    over := '{}';
    granted := '{}';
    lease_bucket := '{}';
    retry_at := '{}';
    SELECT c.buckets, c.sums, c.window_ms, c.leased, c.lease_until, c.clock INTO b, s, w, lsd, lsd_until, clk FROM counters c
      WHERE c.counter = p_counter AND c.key = p_key FOR UPDATE;
    IF NOT FOUND THEN
      IF NOT p_allow_new THEN
        RAISE EXCEPTION 'too many distinct keys counted; this key cannot be counted';
      END IF;
      INSERT INTO counters (counter, key, control_id, kind, window_ms, max, buckets, sums, expires_at)
        VALUES (p_counter, p_key, p_control, p_kind, p_window, p_max[1], '{}', '{}', 0)
        ON CONFLICT (counter, key) DO NOTHING;
      SELECT c.buckets, c.sums, c.window_ms, c.leased, c.lease_until, c.clock INTO b, s, w, lsd, lsd_until, clk FROM counters c
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
      -- A replica whose clock is behind counts at the latest time a step was counted at.
      clk := greatest(clk, p_now[j]);
      cur := floor(clk / width);
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
        -- The step's bucket is the newest or a new one after it, unless a lease's is ahead.
        IF n > 0 AND b[n] = cur THEN
          s[n] := s[n] + a;
          idx := n;
        ELSIF n = 0 OR b[n] < cur THEN
          before_newest := total;
          b := b || cur;
          s := s || a;
          n := n + 1;
          idx := n;
        ELSE
          -- Below a lease's bucket: found from the end (a lease is at most a few buckets
          -- ahead). Written out rather than calling counter_bucket_add: a call per step
          -- doubled the time of a 256-step batch behind a lease.
          idx := n - 1;
          WHILE idx > 0 AND b[idx] > cur LOOP
            idx := idx - 1;
          END LOOP;
          IF idx > 0 AND b[idx] = cur THEN
            s[idx] := s[idx] + a;
          ELSE
            b := b[1:idx] || cur || b[idx + 1:n];
            s := s[1:idx] || a || s[idx + 1:n];
            n := n + 1;
            idx := idx + 1;
          END IF;
          before_newest := NULL;
        END IF;
        step_over := total + a > p_max[j];
        IF step_over AND p_defer[j] AND lsd > 0 AND total - lsd + a <= p_max[j] THEN
          -- Only unused leases keep it out: take it back and let it wait for them.
          s[idx] := s[idx] - a;
          IF idx < n THEN before_newest := NULL; END IF;
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
          SELECT r.b, r.s, r.before_newest INTO b, s, before_newest FROM counter_bucket_add(b, s, lb, g, before_newest, total) r;
          n := cardinality(b);
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
      leased = lsd, lease_until = lsd_until, clock = clk,
      expires_at = (coalesce(b[n], cur) + 61) * width
      WHERE counter = p_counter AND key = p_key;
  END
  $fn$;
`;
