/**
 * Chooses the store from a database URL: `postgres://` / `postgresql://` is PostgreSQL;
 * `sqlite:<path>`, a plain file path or `:memory:` is SQLite; nothing at all is the
 * default file `.guardctl/guardctl.db` under the working directory.
 */
import { join } from 'node:path';
import type { PostgresStoreOptions } from './postgres/postgres-store.js';
import { SqliteStore, type SqliteStoreOptions } from './sqlite/sqlite-store.js';
import type { Store } from './types.js';

export const DEFAULT_SQLITE_PATH = join('.guardctl', 'guardctl.db');

export interface OpenStoreOptions {
  /** Directory the default SQLite path is relative to; default `process.cwd()`. */
  cwd?: string;
  sqlite?: SqliteStoreOptions;
  postgres?: PostgresStoreOptions;
}

export type StoreTarget = { kind: 'postgres'; url: string } | { kind: 'sqlite'; path: string };

/** Where a URL points, without opening anything (the server prints it at start). */
export function storeTargetOf(url: string | undefined, cwd: string = process.cwd()): StoreTarget {
  const value = url?.trim();
  if (!value) return { kind: 'sqlite', path: join(cwd, DEFAULT_SQLITE_PATH) };
  if (/^postgres(ql)?:\/\//i.test(value)) return { kind: 'postgres', url: value };
  if (value.startsWith('sqlite:')) {
    // Accept sqlite:path, sqlite://relative and sqlite:///absolute.
    const rest = value.slice('sqlite:'.length);
    const path = rest.startsWith('///') ? rest.slice(2) : rest.startsWith('//') ? rest.slice(2) : rest;
    return { kind: 'sqlite', path: path === '' ? ':memory:' : path };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    throw new TypeError(`unsupported database URL scheme in "${value}": use postgres://, sqlite: or a file path`);
  }
  return { kind: 'sqlite', path: value };
}

export async function openStore(url: string | undefined, options: OpenStoreOptions = {}): Promise<Store> {
  const target = storeTargetOf(url, options.cwd);
  if (target.kind === 'postgres') {
    // Imported here: the PostgreSQL driver costs a SQLite server several MB of memory.
    const { PostgresStore } = await import('./postgres/postgres-store.js');
    return PostgresStore.open(target.url, options.postgres);
  }
  return new SqliteStore(target.path, options.sqlite);
}
