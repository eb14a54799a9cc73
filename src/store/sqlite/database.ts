/**
 * One SQLite connection as the store's concerns share it: opened with the pragmas the
 * store relies on, migrated, and wrapped so that every write is one IMMEDIATE
 * transaction and every database failure becomes a StoreError kind.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { inVersionOrder, type Migration } from '../migrations.js';
import { nowIso } from '../records.js';
import { StoreError } from '../types.js';
import { sqliteMigrations } from './migrations.js';

export interface SqliteStoreOptions {
  /** How long a writer waits for another connection's lock before failing (ms). */
  busyTimeoutMs?: number;
  /** Rows deleted per transaction when pruning, so writers are never blocked for long. */
  pruneBatchSize?: number;
  /** SQLite page cache per connection, in KiB (default 64 MiB). */
  cacheSizeKib?: number;
  /** Bytes of the file read through mmap (default 256 MiB; 0 turns it off). */
  mmapSizeBytes?: number;
  /**
   * `false` stores no history entries: only for measuring what history costs (bench/shadow.ts).
   * A server always keeps history.
   */
  history?: boolean;
}

/** Maps SQLite failures to the store's error kinds; anything else passes through. */
export function mapSqliteError(error: unknown): unknown {
  if (error instanceof StoreError) return error;
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return new StoreError('conflict', message);
  }
  if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return new StoreError('not_found', message);
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || code === 'SQLITE_CANTOPEN' || code === 'SQLITE_IOERR') {
    return new StoreError('unavailable', message);
  }
  return error;
}

/** Applies the migrations not yet recorded; safe to run on every open and from two processes. */
export function migrateSqlite(db: Database.Database, migrations: readonly Migration[] = sqliteMigrations): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
  const applied = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').pluck();
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  const done: number[] = [];
  for (const migration of inVersionOrder(migrations)) {
    // IMMEDIATE takes the write lock before the check, so a second process opening the
    // same file waits and then sees the migration as applied.
    db.transaction(() => {
      if (applied.get(migration.version) !== undefined) return;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, nowIso());
      done.push(migration.version);
    }).immediate();
  }
  return done;
}

/** Opens (creating its directory), tunes and migrates the database file or `:memory:`. */
function openDatabase(path: string, options: SqliteStoreOptions): Database.Database {
  const file = path === '' ? ':memory:' : path;
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (error) {
    throw mapSqliteError(error);
  }
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
  db.pragma('journal_mode = WAL');
  // NORMAL is durable against application crashes in WAL mode and much faster than FULL.
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  // Checkpoint every ~40 MB of WAL instead of every 4 MB: each checkpoint writes scattered
  // index pages back and syncs, and doing it every few batches was most of ingest's cost.
  db.pragma('wal_autocheckpoint = 10000');
  // The event indexes are written at scattered positions (by control, by agent); with
  // SQLite's default 2 MB page cache every batch would re-read index pages from the OS.
  db.pragma(`cache_size = -${Math.max(2048, Math.floor(options.cacheSizeKib ?? 65_536))}`);
  if (file !== ':memory:') db.pragma(`mmap_size = ${Math.max(0, Math.floor(options.mmapSizeBytes ?? 268_435_456))}`);
  migrateSqlite(db);
  return db;
}

export class SqliteDatabase {
  readonly db: Database.Database;
  /** Rows deleted per transaction when pruning. */
  readonly pruneBatchSize: number;
  readonly #statements = new Map<string, Database.Statement>();

  constructor(path: string, options: SqliteStoreOptions = {}) {
    this.db = openDatabase(path, options);
    this.pruneBatchSize = options.pruneBatchSize ?? 10_000;
  }

  /**
   * Runs `fn` in one transaction and maps database errors to store errors. IMMEDIATE takes
   * the write lock at BEGIN, waiting up to busy_timeout for another connection (the event
   * writer thread, another process). A deferred transaction that read first would instead
   * fail at once with "database is locked" when that connection committed in between.
   */
  write<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn).immediate();
    } catch (error) {
      throw mapSqliteError(error);
    }
  }

  read<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      throw mapSqliteError(error);
    }
  }

  /** A statement prepared once per distinct text (queries whose filters vary per call). */
  cached(sql: string): Database.Statement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Deletes in batches of `pruneBatchSize`, each its own short transaction, so ingest keeps going. */
  pruneInBatches(statement: Database.Statement, cutoff: number): number {
    let deleted = 0;
    for (;;) {
      const changes = this.write(() => statement.run(cutoff, this.pruneBatchSize).changes);
      deleted += changes;
      if (changes < this.pruneBatchSize) return deleted;
    }
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
