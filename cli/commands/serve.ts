import type { Command } from 'commander';
import { loadConfig, type ServerConfig } from '../../src/server/config.js';
import { startServer } from '../../src/server/start.js';

export interface ServeOptions {
  host?: string;
  port?: string;
  db?: string;
  watch?: string;
}

/** Flags override the environment; values are checked by loadConfig like the variables they replace. */
export function serveConfigOf(options: ServeOptions, env: Record<string, string | undefined> = process.env): ServerConfig {
  const merged = { ...env };
  if (options.host !== undefined) merged.HOST = options.host;
  if (options.port !== undefined) merged.PORT = options.port;
  if (options.db !== undefined) {
    merged.DATABASE_URL = options.db;
    delete merged.DB_URL;
  }
  return loadConfig(merged, { watchDir: options.watch ?? null });
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('Run the control server (SQLite under .guardctl/ unless DATABASE_URL or --db says otherwise)')
    .option('--host <host>', 'listen address (HOST, default 0.0.0.0)')
    .option('--port <port>', 'listen port, 0 for any free port (PORT, default 8000)')
    .option('--db <url>', 'database: a SQLite file, :memory:, or postgres://... (DATABASE_URL / DB_URL)')
    .option('--watch <dir>', 'load a controls directory before listening and hot-reload it on change (its controls become read-only through the API; docs/hot-reload.md)')
    .action(async (options: ServeOptions) => {
      // The server runs until SIGTERM/SIGINT; startServer's handlers close it cleanly.
      await startServer(serveConfigOf(options));
    });
}
