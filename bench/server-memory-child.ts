/**
 * Child process of the server memory benchmarks (bench/server.ts, bench/policies.ts):
 * starts the real server on the given SQLite file, evaluates one step for each of the
 * agents `agent-0` .. `agent-<count - 1>` over HTTP so every compiled set is in memory,
 * then prints its resident set size. `serverMemory` (server-memory.ts) runs it.
 */
import { loadConfig } from '../src/server/config.js';
import { startServer } from '../src/server/start.js';

const db = process.argv[2];
const agents = Number(process.argv[3]);
if (!db || !Number.isInteger(agents)) throw new Error('usage: server-memory-child.js <sqlite file> <agents>');
const config = loadConfig({ OBSERVABILITY_ENABLED: 'false' }, { host: '127.0.0.1', port: 0, databaseUrl: db });
const server = await startServer(config, { logger: false, handleSignals: false, print: () => undefined });
try {
  for (let a = 0; a < agents; a++) {
    const res = await fetch(`${server.url}/api/v1/evaluation`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agent_name: `agent-${a}`, stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'select 1' } } }),
    });
    if (res.status !== 200) throw new Error(`agent-${a}: HTTP ${res.status} ${await res.text()}`);
  }
  if (server.app.controlSets.size !== agents) throw new Error(`expected ${agents} compiled sets, got ${server.app.controlSets.size}`);
  (globalThis as { gc?: () => void }).gc?.();
  const mem = process.memoryUsage();
  process.stdout.write(`RSS_BYTES=${mem.rss}\nHEAP_BYTES=${mem.heapUsed}\nEXTERNAL_BYTES=${mem.external}\n`);
} finally {
  await server.close();
}
