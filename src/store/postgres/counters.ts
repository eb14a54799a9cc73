/**
 * Counters of rate and budget controls shared by replicas. The steps of one counter and
 * key are counted by one call of `counter_take_leased` (migration 6) at a time: it locks the
 * key's row, and for each step in arrival order drops buckets that left the window, checks
 * and adds, and answers the step's sum, all in one statement and one round trip. Steps of
 * that key that arrive while a call is under way wait for it and go together in the next
 * call (at most MAX_BATCH), so a busy key costs one statement, one row lock and one commit
 * per batch rather than per step. The row lock serialises replicas counting the same key,
 * so the limit holds exactly. Different keys are counted in parallel. A step may also carry
 * its replica's lease terms (give a lease back, ask for one: counting/leased-counts.ts).
 *
 * A step that has no answer within the timeout (waiting for an earlier call, for a
 * connection or for the statement) fails, and so does every step of a call that fails:
 * each follows its control's on_error.
 */
import type { LeaseTerms, SharedCountAnswer, SharedCountRequest, SharedCounterStore, StoredCounter } from '../types.js';
import { counterKindOf } from '../../counting/index.js';
import type { PostgresDatabase } from './database.js';
import { mapPgError } from './errors.js';

/** Most steps of one key decided by one statement. */
export const MAX_BATCH = 256;

interface CounterDbRow {
  counter: string;
  key: string;
  control_id: string;
  kind: string;
  window_ms: number;
  max: number;
  buckets: string[];
  sums: number[];
  expires_at: number;
}

type Answer = SharedCountAnswer;

/** A step waiting for its count. */
interface PendingStep {
  request: SharedCountRequest;
  now: number;
  allowNewKey: boolean;
  lease: LeaseTerms | undefined;
  resolve(answer: Answer): void;
  reject(error: unknown): void;
  /** Answered, failed or timed out: nothing more happens to it. */
  settled: boolean;
  timer: NodeJS.Timeout;
}

export class PostgresCounters implements SharedCounterStore {
  /** Per counter and key with a call under way: the steps that arrived since, in order. */
  readonly #waiting = new Map<string, PendingStep[]>();

  constructor(
    private readonly database: PostgresDatabase,
    /** Longest a step may wait for its count, earlier calls and a connection included (ms). */
    private readonly timeoutMs = 2000,
  ) {}

  countShared(request: SharedCountRequest, now: number, allowNewKey: boolean, lease?: LeaseTerms): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      const step: PendingStep = { request, now, allowNewKey, lease, resolve, reject, settled: false, timer: undefined as unknown as NodeJS.Timeout };
      step.timer = setTimeout(() => fail(step, new Error(`counting timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
      const id = `${request.counter}\u0000${request.key}`;
      const waiting = this.#waiting.get(id);
      if (waiting !== undefined) {
        waiting.push(step);
        return;
      }
      this.#waiting.set(id, []);
      void this.#run(id, [step]);
    });
  }

  /** Counts `batch`, then the next batch of the steps that waited, until none is left. */
  async #run(id: string, first: PendingStep[]): Promise<void> {
    let batch = first;
    for (;;) {
      try {
        const answers = await this.#takeMany(batch);
        batch.forEach((step, i) => answer(step, answers[i]!));
      } catch (error) {
        const mapped = mapPgError(error);
        for (const step of batch) fail(step, mapped);
      }
      batch = nextBatch(this.#waiting.get(id)!);
      if (batch.length === 0) {
        this.#waiting.delete(id);
        return;
      }
    }
  }

  /** One statement for the batch, bounded by the timeout as a whole (a connection's wait included). */
  async #takeMany(batch: PendingStep[]): Promise<Answer[]> {
    const head = batch[0]!.request;
    const query = this.database.pool.query<TakeRow>({
      // Prepared once per connection: a busy key sends this statement back to back.
      name: 'guard_counter_take_leased',
      text: 'SELECT used, over, granted, lease_bucket, retry_at FROM counter_take_leased($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)',
      values: [
        head.counter,
        head.key,
        head.control_id,
        head.kind,
        head.window_ms,
        batch.map((s) => s.now),
        batch.map((s) => s.request.amount),
        batch.map((s) => s.request.max),
        batch.map((s) => s.request.always),
        batch[0]!.allowNewKey,
        batch.map((s) => s.lease?.defer ?? false),
        batch.map((s) => s.lease?.release?.granted ?? 0),
        batch.map((s) => s.lease?.release?.unused ?? 0),
        batch.map((s) => s.lease?.release?.bucket ?? 0),
        batch.map((s) => s.lease?.ask ?? 0),
        Math.max(0, ...batch.map((s) => s.lease?.leaseMs ?? 0)),
      ],
      query_timeout: this.timeoutMs,
    } as { name: string; text: string; values: unknown[] });
    let timer: NodeJS.Timeout | undefined;
    // The pool may wait for a connection (a database that stopped answering) before the
    // statement's own timeout starts: the whole call is bounded too.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`counting timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      const result = await Promise.race([query, deadline]);
      const row = result.rows[0];
      if (!row || row.used.length !== batch.length) throw new Error('counter_take_leased answered no row for each step');
      return batch.map((step, i) => answerOf(row, i, step.lease !== undefined));
    } finally {
      clearTimeout(timer);
      // A query that lost the race settles later; its failure is already reported.
      query.catch(() => undefined);
    }
  }

  async counterUsage(now: number): Promise<StoredCounter[]> {
    const rows = await this.database.query<CounterDbRow>('SELECT * FROM counters WHERE expires_at > $1 ORDER BY counter, key LIMIT 10000', [now]);
    return rows.map((r) => ({
      counter: r.counter,
      key: r.key,
      control_id: Number(r.control_id),
      kind: counterKindOf(r.kind),
      window_ms: r.window_ms,
      max: r.max,
      idx: r.buckets.map(Number),
      val: r.sums.map(Number),
      expires_at: r.expires_at,
    }));
  }

  async counterBegan(counter: string, key: string): Promise<{ window_ms: number; since: number | null } | null> {
    const [row] = await this.database.query<{ window_ms: number; since: number | null }>('SELECT window_ms, since FROM counters WHERE counter = $1 AND key = $2', [counter, key]);
    return row === undefined ? null : { window_ms: Number(row.window_ms), since: row.since === null ? null : Number(row.since) };
  }

  async pruneCounters(now: number): Promise<ReadonlyMap<number, number>> {
    await this.database.query('DELETE FROM counters WHERE expires_at <= $1', [now]);
    const rows = await this.database.query<{ control_id: string; n: string }>('SELECT control_id, count(*) AS n FROM counters GROUP BY control_id');
    return new Map(rows.map((r) => [Number(r.control_id), Number(r.n)]));
  }
}

/**
 * The steps at the head of `waiting` that one statement can decide together (same
 * window, control, kind and key cap: the statement takes those once), at most MAX_BATCH;
 * steps that already timed out are dropped, never counted.
 */
function nextBatch(waiting: PendingStep[]): PendingStep[] {
  let drop = 0;
  while (drop < waiting.length && waiting[drop]!.settled) drop++;
  waiting.splice(0, drop);
  const head = waiting[0];
  if (head === undefined) return [];
  const batch: PendingStep[] = [];
  let taken = 0;
  for (; taken < waiting.length && batch.length < MAX_BATCH; taken++) {
    const step = waiting[taken]!;
    if (step.settled) continue;
    if (!sameStatement(step, head)) break;
    batch.push(step);
  }
  waiting.splice(0, taken);
  return batch;
}

interface TakeRow {
  used: number[];
  over: boolean[];
  granted: number[];
  lease_bucket: string[];
  retry_at: number[];
}

/** Step i's answer; the lease fields only for a step that came with lease terms. */
function answerOf(row: TakeRow, i: number, leased: boolean): Answer {
  const answer: Answer = { used: Number(row.used[i]), over: row.over[i]! };
  if (!leased) return answer;
  answer.granted = Number(row.granted[i]);
  answer.leaseBucket = Number(row.lease_bucket[i]);
  const retryAt = Number(row.retry_at[i]);
  if (retryAt > 0) answer.retryAt = retryAt;
  return answer;
}

function sameStatement(a: PendingStep, b: PendingStep): boolean {
  return (
    a.request.window_ms === b.request.window_ms &&
    a.request.control_id === b.request.control_id &&
    a.request.kind === b.request.kind &&
    a.allowNewKey === b.allowNewKey
  );
}

function answer(step: PendingStep, result: Answer): void {
  if (step.settled) return;
  step.settled = true;
  clearTimeout(step.timer);
  step.resolve(result);
}

function fail(step: PendingStep, error: unknown): void {
  if (step.settled) return;
  step.settled = true;
  clearTimeout(step.timer);
  step.reject(error);
}
