/**
 * When each key's counts began (migration 23): `since` is the key's clock when its row was
 * made or its window changed, which empties its buckets (counter_take_leased). A count
 * noted before `since` (a question's, counted-already.ts) is in no bucket the row holds,
 * even with the window changed back to the one it was counted in. A trigger sets it, so
 * every statement that writes the row (the batches' and the earlier counter_take of
 * replicas during an upgrade) keeps it without being rewritten. Rows of before the
 * migration hold NULL until their next count: nothing noted before that is taken as held.
 */
export const COUNTER_SINCE = `
  ALTER TABLE counters ADD COLUMN since DOUBLE PRECISION;
  CREATE FUNCTION counter_since() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    NEW.since := NEW.clock;
    RETURN NEW;
  END
  $fn$;
  CREATE TRIGGER counter_since BEFORE UPDATE ON counters
    FOR EACH ROW WHEN (OLD.since IS NULL OR NEW.window_ms <> OLD.window_ms)
    EXECUTE FUNCTION counter_since();
`;
