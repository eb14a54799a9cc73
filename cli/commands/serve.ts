import { stat } from 'node:fs/promises';
import { isAbsolute, relative } from 'node:path';
import { Option, type Command } from 'commander';
import { ConfigError, loadConfig, type ServerConfig } from '../../src/server/config.js';
import { startServer } from '../../src/server/start.js';
import { storeTargetOf } from '../../src/store/open-store.js';
import { LOG_FORMATS } from '../../src/server/logging.js';
import { withExamples } from '../help.js';
import { explainStartupError, type SettingSources } from '../startup-errors.js';

export interface ServeOptions {
  host?: string;
  port?: string;
  db?: string;
  watch?: string;
  logFormat?: string;
}

type Env = Record<string, string | undefined>;

/** The variable each flag stands for. */
const FLAG_OF_VARIABLE: Record<string, { flag: string; option: keyof ServeOptions }> = {
  HOST: { flag: '--host', option: 'host' },
  PORT: { flag: '--port', option: 'port' },
  DATABASE_URL: { flag: '--db', option: 'db' },
  GUARD_LOG_FORMAT: { flag: '--log-format', option: 'logFormat' },
};

/**
 * Flags override the environment; values are checked by loadConfig like the variables they
 * replace, and a bad value is blamed on what the user typed (`--port`, not `PORT`).
 */
export function serveConfigOf(options: ServeOptions, env: Env = process.env): ServerConfig {
  const merged = { ...env };
  if (options.host !== undefined) merged.HOST = options.host;
  if (options.port !== undefined) merged.PORT = options.port;
  if (options.logFormat !== undefined) merged.GUARD_LOG_FORMAT = options.logFormat;
  if (options.db !== undefined) {
    merged.DATABASE_URL = options.db;
    delete merged.DB_URL;
  }
  try {
    return loadConfig(merged, { watchDir: options.watch ?? null });
  } catch (error) {
    const byFlag = error instanceof ConfigError ? FLAG_OF_VARIABLE[error.setting] : undefined;
    throw byFlag && options[byFlag.option] !== undefined ? (error as ConfigError).renamed(byFlag.flag) : error;
  }
}

/** Which flag or variable gave the database, host and port (null: the default). */
export function settingSourcesOf(options: ServeOptions, env: Env = process.env): SettingSources {
  const set = (name: string) => (env[name]?.trim() ? name : null);
  return {
    database: options.db !== undefined ? '--db' : (set('DATABASE_URL') ?? set('DB_URL')),
    host: options.host !== undefined ? '--host' : set('HOST'),
    port: options.port !== undefined ? '--port' : set('PORT'),
  };
}

export function registerServe(program: Command): void {
  const command = program
    .command('serve')
    .description('Run the control server (SQLite under .guardctl/ unless DATABASE_URL or --db says otherwise)')
    .option('--host <host>', 'listen address (HOST, default 127.0.0.1: this machine only; 0.0.0.0 for every interface)')
    .option('--port <port>', 'listen port, 0 for any free port (PORT, default 8000)')
    .option('--db <url>', 'database: a SQLite file, :memory:, or postgres://... (DATABASE_URL / DB_URL)')
    .addOption(new Option('--log-format <format>', 'log lines for people, or JSON lines for a log collector (GUARD_LOG_FORMAT, default human)').choices(LOG_FORMATS))
    .option('--watch <dir>', 'load a controls directory before listening and hot-reload it on change (its controls become read-only through the API; docs/hot-reload.md)')
    .action(async (options: ServeOptions) => {
      const config = serveConfigOf(options);
      const newDatabase = await newSqliteFileOf(config);
      let handle;
      try {
        // The server runs until SIGTERM/SIGINT; startServer's handlers close it cleanly.
        handle = await startServer(config);
      } catch (error) {
        throw await explainStartupError(error, { config, sources: settingSourcesOf(options) });
      }
      // A mistyped --db would otherwise look like a server that lost its controls.
      if (newDatabase) handle.app.log.info(`created a new database file ${newDatabase}`);
      if (!config.apiKeyEnabled && !isLoopback(config.host)) {
        handle.app.log.warn(
          `API keys are off and the server listens on ${config.host}: anyone who can reach it can change its controls; set GUARD_API_KEY_ENABLED=true with GUARD_ADMIN_API_KEYS, or listen on 127.0.0.1`,
        );
      }
    });
  withExamples(command, [
    ['serve ./controls on http://127.0.0.1:8000 and reload it on every change (what npm start runs)', 'guardctl serve --watch controls'],
    ['a throwaway server on a free port, the port printed at start', 'guardctl serve --db :memory: --port 0'],
    ['a replica on PostgreSQL, on every interface, with keys and JSON logs (docs/deployment.md)', 'DATABASE_URL=postgres://guard@db:5432/guard GUARD_API_KEY_ENABLED=true GUARD_ADMIN_API_KEYS=… guardctl serve --host 0.0.0.0 --log-format json'],
  ]);
}

/** The SQLite file the server is about to create, or null (it exists, is :memory:, or is PostgreSQL). */
async function newSqliteFileOf(config: ServerConfig): Promise<string | null> {
  const target = storeTargetOf(config.databaseUrl);
  if (target.kind !== 'sqlite' || target.path === ':memory:') return null;
  if (await stat(target.path).then(() => true, () => false)) return null;
  // As the user would write it: relative to here when it is below here.
  const shown = relative(process.cwd(), target.path);
  return shown.startsWith('..') || isAbsolute(shown) ? target.path : shown;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}
