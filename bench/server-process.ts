import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { WorkCounts } from './work-counter.js';
import type { WorkloadName } from './workloads.js';

/** Which server bench/server-child.ts starts. */
export interface ServerSpec {
  /** `bare`: bench/server.ts's baseline; `guard`: guardctl on a SQLite file. */
  kind: 'bare' | 'guard';
  /** Controls in scope for the benchmark step: 1, or 10 of bench/server.ts's 50. */
  controls?: 1 | 10;
  observability?: boolean;
  /** OBSERVABILITY_NON_MATCH_SAMPLE_RATE; 1 stores every non-match as a row too. */
  sampleRate?: number;
  /** The benchmark controls in shadow mode (bench/shadow.ts); enforced by default. */
  mode?: 'shadow';
  /** OTEL_* variables: tracing on (bench/otel.ts). */
  otel?: Record<string, string>;
  /** The controls of one of bench/workloads.ts's workloads instead of bench/server.ts's 50. */
  workload?: WorkloadName;
  /** Count checks and RE2 calls (bench/work-counter.ts): for counting only, never timed. */
  countWork?: boolean;
  /** A PostgreSQL URL to run on instead of a SQLite file. */
  databaseUrl?: string;
  /** Also a `rate` control in scope for the step with this limit (bench/budgets.ts). */
  rateLimit?: number;
  /** Also two session-aware controls in scope for the step (bench/sessions.ts). */
  sessions?: boolean;
  /**
   * `by-request` (SQLite): the sessions' touched rows are written when asked
   * (`write-sessions`), not once a second: the instruction counts charge that write at the
   * rate of a full-speed server (bench/sessions.ts).
   */
  sessionWrites?: 'by-request';
  /**
   * Idle keep-alive connections are kept this long instead of Fastify's 72 s (counted
   * servers: bench/callgrind.ts says why).
   */
  keepAliveMs?: number;
  /** false: the database is seeded already (a second replica on the same schema). */
  seed?: boolean;
}

export type ChildRequest = { id: number; op: 'stats' | 'flush' | 'write-sessions' | 'close' };

export interface ChildStats {
  /** The process's CPU time so far (all threads), µs. */
  cpuMicros: number;
  /** Events written (rows plus the non-matches of rollups written) and dropped. */
  written: number;
  dropped: number;
  /** Event rows stored. */
  rows: number;
  /** OpenTelemetry spans dropped (queue full or export failed), with tracing on. */
  spansDropped: number;
  /** Connections the server accepted so far. */
  connections: number;
  /** Checks and RE2 calls so far, when the server counts them (`countWork`). */
  work: WorkCounts | null;
}

export interface ServerProcess {
  /** The evaluation URL (the baseline's route for `bare`). */
  url: string;
  stats(): Promise<ChildStats>;
  /** Writes what observability holds; resolves when it is stored. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Starts a server in its own process (see bench/server-child.ts) and waits until it listens. */
export function startServerProcess(spec: ServerSpec): Promise<ServerProcess> {
  const script = fileURLToPath(new URL('./server-child.js', import.meta.url));
  const child = fork(script, [JSON.stringify(spec)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let next = 0;
  const waiting = new Map<number, (reply: { stats?: ChildStats }) => void>();
  const ask = (op: ChildRequest['op']) =>
    new Promise<{ stats?: ChildStats }>((resolve) => {
      const id = ++next;
      waiting.set(id, resolve);
      child.send({ id, op } satisfies ChildRequest);
    });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`benchmark server exited with ${code}`)));
    child.on('message', (message: { ready?: string; id?: number; stats?: ChildStats }) => {
      if (message.ready) {
        resolve({
          url: message.ready,
          stats: async () => (await ask('stats')).stats!,
          flush: async () => void (await ask('flush')),
          close: async () => {
            const exited = new Promise((done) => child.once('exit', done));
            await ask('close');
            await exited;
          },
        });
        return;
      }
      if (message.id !== undefined) {
        waiting.get(message.id)?.(message);
        waiting.delete(message.id);
      }
    });
  });
}
