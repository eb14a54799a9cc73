/**
 * The load generator's own process: runs autocannon with the options given as JSON in
 * argv[2] and prints its summary as JSON. Keeping it out of the server's process means
 * the generator's work (which grows with response size) is never billed to the server.
 */
import { createRequire } from 'node:module';

interface CannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}
// autocannon ships no types; this is the slice of its API used here.
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<CannonResult>;

const options = JSON.parse(process.argv[2] ?? '{}') as Record<string, unknown> & { warmup?: number; duration: number };
if (options.warmup) await autocannon({ ...options, duration: options.warmup });
const r = await autocannon(options);
process.stdout.write(
  `${JSON.stringify({ rps: r.requests.total / options.duration, p50: r.latency.p50, p99: r.latency.p99, total: r.requests.total, failed: r.non2xx + r.errors })}\n`,
);
