/**
 * The load generator's own process: runs autocannon with the options given as JSON in
 * argv[2] and prints its summary as JSON. Keeping it out of the server's process means
 * the generator's work (which grows with response size) is never billed to the server.
 */
import { createRequire } from 'node:module';

interface CannonResult {
  /** Seconds the run actually lasted: autocannon rounds a fractional duration up to whole seconds. */
  duration: number;
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}
// autocannon ships no types; this is the slice of its API used here.
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<CannonResult>;

const options = JSON.parse(process.argv[2] ?? '{}') as Record<string, unknown> & { warmup?: number; duration: number };
if (options.warmup) {
  await autocannon({ ...options, duration: options.warmup });
  // Started by runLoad with an IPC channel: hand over, and go on when told to.
  if (process.send) {
    await new Promise<void>((resolve) => {
      process.once('message', () => resolve());
      process.send!({ warm: true });
    });
  }
}
const r = await autocannon(options);
// Exits once the summary is written: the warm-up's instance leaves timers behind that
// would otherwise hold the process open for seconds.
process.stdout.write(
  `${JSON.stringify({ rps: r.requests.total / r.duration, p50: r.latency.p50, p99: r.latency.p99, total: r.requests.total, failed: r.non2xx + r.errors })}\n`,
  () => process.exit(0),
);
