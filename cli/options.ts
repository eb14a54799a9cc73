/**
 * Option parsing shared by the GitOps commands: where the server is, the key, the timeout
 * and the output format. Pure functions of (flags, environment), testable without a command.
 */
import { Option, type Command } from 'commander';
import { ConnectionError, GuardClient } from '../src/client/index.js';
import { ApiError, UserError } from '../src/errors.js';

export const DEFAULT_SERVER = 'http://127.0.0.1:8000';
export const DEFAULT_TIMEOUT_MS = 30_000;

export interface ConnectionFlags {
  server?: string;
  apiKey?: string;
  timeout?: string;
}

export interface Connection {
  serverUrl: string;
  apiKey: string | undefined;
  timeoutMs: number;
  /** Whether the server was named (flag or GUARD_URL) rather than the default. */
  explicit: boolean;
}

type Env = Record<string, string | undefined>;

/** Adds --server, --api-key and --timeout (each documented with its environment variable). */
export function addConnectionOptions(command: Command): Command {
  return command
    .option('--server <url>', `server address (GUARD_URL, default ${DEFAULT_SERVER})`)
    .option('--api-key <key>', 'API key sent as X-API-Key (GUARD_API_KEY)')
    .option('--timeout <duration>', 'per-request timeout: 30s, 500ms or seconds (default 30s)');
}

export function formatOption(formats: readonly string[], fallback = 'text'): Option {
  return new Option('--format <format>', 'output format').choices([...formats]).default(fallback);
}

export function connectionOf(flags: ConnectionFlags, env: Env = process.env): Connection {
  const fromFlag = flags.server?.trim();
  const fromEnv = env.GUARD_URL?.trim();
  const serverUrl = fromFlag || fromEnv || DEFAULT_SERVER;
  if (!/^https?:\/\//i.test(serverUrl)) {
    throw new UserError(`--server "${serverUrl}" is not an http(s) URL`, `for example --server ${DEFAULT_SERVER}`);
  }
  const apiKey = flags.apiKey?.trim() || env.GUARD_API_KEY?.trim() || undefined;
  return {
    serverUrl: serverUrl.replace(/\/+$/, ''),
    apiKey,
    timeoutMs: flags.timeout === undefined ? DEFAULT_TIMEOUT_MS : parseDuration(flags.timeout),
    explicit: Boolean(fromFlag || fromEnv),
  };
}

/** `30s`, `500ms`, `2m` or a bare number of seconds -> milliseconds. */
export function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(text);
  if (!m) throw new UserError(`--timeout "${text}" is not a duration`, 'write it as 30s, 500ms or 2m');
  const n = Number(m[1]);
  const ms = m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
  if (ms <= 0) throw new UserError('--timeout must be above zero');
  return Math.round(ms);
}

export function clientOf(connection: Connection): GuardClient {
  return new GuardClient({ serverUrl: connection.serverUrl, apiKey: connection.apiKey, timeoutMs: connection.timeoutMs });
}

/**
 * Server trouble as one line that says what to do: down, timed out, 401, 403. Other API
 * errors pass through (cli/main.ts prints their problem details).
 */
export function explainServerError(error: unknown, connection: Connection): unknown {
  const where = connection.serverUrl;
  if (error instanceof ConnectionError) {
    if (error.code === 'TIMEOUT' || /time/i.test(error.code)) {
      return new UserError(
        `${where} did not answer within ${connection.timeoutMs / 1000}s: check the server's health or raise --timeout`,
      );
    }
    return new UserError(
      `cannot reach the server at ${where} (${error.reason}): start it with "guardctl serve" or point --server / GUARD_URL at a running one`,
    );
  }
  if (error instanceof ApiError && error.status === 401) {
    return new UserError(
      `${where} rejected the API key (401): pass a valid key with --api-key or GUARD_API_KEY`,
    );
  }
  if (error instanceof ApiError && error.status === 403) {
    return new UserError(
      `${where} refused: this needs an admin key (403): use a key listed in the server's GUARD_ADMIN_API_KEYS (to decide approvals, GUARD_APPROVER_API_KEYS)`,
    );
  }
  return error;
}

/** Runs `fn` with server errors translated by explainServerError. */
export async function withServer<T>(connection: Connection, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw explainServerError(error, connection);
  }
}
