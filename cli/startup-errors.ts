/**
 * `guardctl serve`'s ordinary start-up mistakes as one line each: what is wrong, which flag
 * or variable set it, what to do. A port in use, PostgreSQL down or a directory given as the
 * database file are the user's to fix, so they must not read like a crash (a stack trace
 * and exit 70). Errors are recognised by what the operating system, better-sqlite3 and pg
 * report (codes and messages), and by looking at the path, never by where they were thrown.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../src/errors.js';
import type { ServerConfig } from '../src/server/config.js';
import { storeTargetOf } from '../src/store/open-store.js';

/** What set each value: a flag (`--db`), a variable (`DATABASE_URL`), or null for the default. */
export interface SettingSources {
  database: string | null;
  host: string | null;
  port: string | null;
}

export interface StartupContext {
  config: Pick<ServerConfig, 'host' | 'port' | 'databaseUrl'>;
  sources: SettingSources;
  cwd?: string;
}

interface ErrorFacts {
  code: string | undefined;
  syscall: string | undefined;
  hostname: string | undefined;
  message: string;
}

/** One line, as `what (setting): what to do`, the layout of every guardctl error. */
function oneLine(what: string, todo: string): UserError {
  return new UserError(`${what}: ${todo}`);
}

/** How to set `value` through `source`: `--db x` for a flag, `DATABASE_URL=x` for a variable. */
function setting(source: string, value: string): string {
  return source.startsWith('--') ? `${source} ${value}` : `${source}=${value}`;
}

function factsOf(error: unknown): ErrorFacts {
  const e = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const text = (key: string) => (typeof e[key] === 'string' ? e[key] : undefined);
  return { code: text('code'), syscall: text('syscall'), hostname: text('hostname'), message: error instanceof Error ? error.message : String(error) };
}

/**
 * The start-up failure as a UserError when it is one of the known mistakes; anything else
 * is returned unchanged (an internal error, reported with its stack).
 */
export async function explainStartupError(error: unknown, ctx: StartupContext): Promise<unknown> {
  if (error instanceof UserError) return error;
  const facts = factsOf(error);
  return listenProblem(facts, ctx) ?? (await databaseProblem(error, facts, ctx)) ?? error;
}

function listenProblem(f: ErrorFacts, ctx: StartupContext): UserError | null {
  if (f.syscall !== 'listen' && !(f.syscall === 'getaddrinfo' && f.hostname === ctx.config.host)) return null;
  const { host, port } = ctx.config;
  const portSource = ctx.sources.port ?? '--port';
  const hostSource = ctx.sources.host ?? '--host';
  switch (f.code) {
    case 'EADDRINUSE':
      return oneLine(
        `port ${port} on ${host} is already in use (${ctx.sources.port ?? 'the default port'})`,
        `stop the process that holds it (another guardctl serve?) or choose another port, for example ${setting(portSource, String(port === 8000 ? 8001 : 8000))} (0 picks a free one)`,
      );
    case 'EACCES':
      return oneLine(`no permission to listen on port ${port} (${portSource}), ports below 1024 need administrator rights`, `choose a port above 1023, for example ${setting(portSource, '8000')}`);
    case 'EADDRNOTAVAIL':
      return oneLine(`${host} is not an address of this machine (${hostSource})`, `listen on 127.0.0.1 (this machine only), 0.0.0.0 (every interface) or one of its own addresses, for example ${setting(hostSource, '127.0.0.1')}`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return oneLine(`the listen address ${host} does not resolve (${hostSource})`, `use an IP address, for example ${setting(hostSource, '127.0.0.1')}`);
    case undefined:
    default:
      return null;
  }
}

async function databaseProblem(error: unknown, f: ErrorFacts, ctx: StartupContext): Promise<UserError | null> {
  let target;
  try {
    target = storeTargetOf(ctx.config.databaseUrl, ctx.cwd);
  } catch {
    // loadConfig refuses unsupported schemes before anything starts.
    return null;
  }
  return target.kind === 'postgres' ? postgresProblem(error, f, target.url, ctx.sources) : sqliteProblem(f, target.path, ctx.sources);
}

async function sqliteProblem(f: ErrorFacts, path: string, sources: SettingSources): Promise<UserError | null> {
  // With neither flag nor variable, the default file is in the way: say how to pick another.
  const source = sources.database ?? '--db';
  const said = sources.database ?? 'the default database file';
  const elsewhere = `choose another file, for example ${setting(source, '.guardctl/guardctl.db')}`;
  if (f.syscall === 'mkdir') {
    const why =
      f.code === 'EEXIST' || f.code === 'ENOTDIR' ? 'a file is in the way' : f.code === 'EACCES' || f.code === 'EPERM' ? 'permission denied' : f.code === 'EROFS' ? 'the file system is read-only' : (f.code ?? f.message);
    return oneLine(`cannot create the directory of the database file ${path} (${said}), ${why}`, elsewhere);
  }
  const info = await stat(path).catch(() => null);
  if (info?.isDirectory()) {
    return oneLine(`${path} is a directory, not a database file (${said})`, `name a file in it, for example ${setting(source, join(path, 'guardctl.db'))}`);
  }
  if (f.code === 'SQLITE_NOTADB' || /file is not a database/i.test(f.message)) {
    return oneLine(`${path} is not a SQLite database (${said})`, `name a guardctl database, or a path that does not exist yet (it is created there)`);
  }
  if (f.code === 'SQLITE_CORRUPT' || /malformed/i.test(f.message)) {
    return oneLine(`the database file ${path} is damaged (${said})`, `restore it from a backup, or ${elsewhere}`);
  }
  if (f.code === 'SQLITE_READONLY' || /readonly database/i.test(f.message)) {
    return oneLine(`the database file ${path} cannot be written (${said})`, `give this user write access to the file and its directory, or ${elsewhere}`);
  }
  if (f.code === 'SQLITE_CANTOPEN' || f.code === 'EACCES' || /unable to open database file/i.test(f.message)) {
    return oneLine(`cannot open the database file ${path} (${said})`, `check that this user may write to the file and its directory, or ${elsewhere}`);
  }
  return null;
}

/** pg's and the network's failures, said in terms of the URL's host and database, never its password. */
function postgresProblem(error: unknown, f: ErrorFacts, url: string, sources: SettingSources): UserError | null {
  const source = sources.database ?? 'DATABASE_URL';
  const { server, host, database } = postgresAddress(url);
  if (error instanceof TypeError && /invalid url/i.test(f.message)) {
    return oneLine(`${source} is not a valid postgres:// URL`, 'write it as postgres://user:password@host:5432/database, percent-encoding special characters in the password');
  }
  if (f.code === '3D000' || /database ".*" does not exist/.test(f.message)) {
    return oneLine(`PostgreSQL at ${server} has no database "${database}" (${source})`, `create it (createdb -h ${host} ${database}) or name an existing database in ${source}`);
  }
  if (f.code === '28P01' || f.code === '28000' || /authentication failed|role ".*" does not exist|pg_hba\.conf/.test(f.message)) {
    return oneLine(`PostgreSQL at ${server} refused the login (${source}: ${f.message})`, `correct the user and password in ${source}`);
  }
  if (f.code === '42501') {
    return oneLine(`PostgreSQL at ${server} did not let this user create guardctl's tables (${source}: ${f.message})`, 'grant the user CREATE on the database, or connect as its owner');
  }
  if (f.code === 'ECONNREFUSED' || /ECONNREFUSED/.test(f.message)) {
    return oneLine(`cannot connect to PostgreSQL at ${server}, connection refused (${source})`, `start PostgreSQL, or correct the host and port in ${source}`);
  }
  if (/ENOTFOUND|EAI_AGAIN/.test(f.message)) {
    return oneLine(`cannot connect to PostgreSQL: the host ${host} does not resolve (${source})`, `correct the host in ${source}`);
  }
  if (/timeout|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH/i.test(f.message)) {
    return oneLine(`PostgreSQL at ${server} did not answer (${source})`, `check that it runs there and that no firewall is in the way, or correct ${source}`);
  }
  if (/database unavailable|Connection terminated|the database system is/i.test(f.message)) {
    return oneLine(`cannot use PostgreSQL at ${server} (${source}: ${f.message})`, 'check that it is up and accepts connections, then start again');
  }
  return null;
}

function postgresAddress(url: string): { server: string; host: string; database: string } {
  try {
    const parsed = new URL(url);
    const host = parsed.hostname || 'localhost';
    return { server: `${host}:${parsed.port || '5432'}`, host, database: decodeURIComponent(parsed.pathname.slice(1)) || '(default)' };
  } catch {
    return { server: 'the configured server', host: 'localhost', database: '(unknown)' };
  }
}
