/**
 * Child process of the server memory benchmark (bench/server.ts): starts the real server
 * on the given SQLite file, evaluates one step for each of the 1,000 agents over HTTP so
 * every compiled set is in memory, then prints its resident set size.
 */
import { loadConfig } from '../src/server/config.js';
import { startServer } from '../src/server/start.js';

const db = process.argv[2];
if (!db) throw new Error('usage: server-memory-child.js <sqlite file>');
const config = loadConfig({ OBSERVABILITY_ENABLED: 'false' }, { host: '127.0.0.1', port: 0, databaseUrl: db });
const server = await startServer(config, { logger: false, handleSignals: false, print: () => undefined });
try {
  for (let a = 0; a < 1000; a++) {
    const res = await fetch(`${server.url}/api/v1/evaluation`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agent_name: `agent-${a}`, stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'select 1' } } }),
    });
    if (res.status !== 200) throw new Error(`agent-${a}: HTTP ${res.status} ${await res.text()}`);
  }
  if (server.app.controlSets.size !== 1000) throw new Error(`expected 1000 compiled sets, got ${server.app.controlSets.size}`);
  (globalThis as { gc?: () => void }).gc?.();
  const mem = process.memoryUsage();
  process.stdout.write(`RSS_BYTES=${mem.rss}\nHEAP_BYTES=${mem.heapUsed}\nEXTERNAL_BYTES=${mem.external}\n`);
} finally {
  await server.close();
}
