import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore, migrateSqlite } from '../../src/store/sqlite/sqlite-store.js';
import { sqliteMigrations } from '../../src/store/sqlite/migrations.js';
import { defineStoreContract, event } from './store-contract.js';
import { defineHistoryContract } from './history-contract.js';
import { defineApprovalContract } from './approval-contract.js';
import { definePolicyContract } from './policy-contract.js';

const dir = mkdtempSync(join(tmpdir(), 'guardctl-store-'));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

defineStoreContract('sqlite file', async () => new SqliteStore(join(dir, `contract-${++n}`, 'guard.db')));
defineStoreContract('sqlite :memory:', async () => new SqliteStore(':memory:'));
definePolicyContract('sqlite file', async () => new SqliteStore(join(dir, `policy-${++n}`, 'guard.db')));
defineHistoryContract('sqlite file', async () => new SqliteStore(join(dir, `history-${++n}`, 'guard.db')));
{
  // Two connections to one file, as two processes (a restart, a second server) have.
  const files = new WeakMap<object, string>();
  defineApprovalContract(
    'sqlite file',
    async () => {
      const file = join(dir, `approvals-${++n}`, 'guard.db');
      const store = new SqliteStore(file);
      files.set(store, file);
      return store;
    },
    async (store) => new SqliteStore(files.get(store)!),
  );
}
defineApprovalContract('sqlite :memory:', async () => new SqliteStore(':memory:'));

describe('SqliteStore specifics', () => {
  it('creates the parent directory and sets WAL, foreign keys and busy_timeout', async () => {
    const file = join(dir, 'nested', 'deeper', 'guard.db');
    const store = new SqliteStore(file, { busyTimeoutMs: 1234 });
    await store.close();
    const db = new Database(file);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
    // foreign_keys and busy_timeout are per connection: check them through behaviour.
    const again = new SqliteStore(file);
    await again.upsertAgent({ agent_name: 'bot' });
    const c = await again.createControl({ name: 'c' });
    await again.linkControl('bot', c.control_id);
    await again.deleteControl(c.control_id);
    expect(await again.listLinks()).toEqual([]);
    await again.close();
  });

  it('applies migrations once: opening the same file twice keeps the data', async () => {
    const file = join(dir, 'twice', 'guard.db');
    const first = new SqliteStore(file);
    await first.createControl({ name: 'kept' });
    const second = new SqliteStore(file);
    expect((await second.getControlByName('kept'))?.name).toBe('kept');
    await first.close();
    await second.close();
    const db = new Database(file);
    const versions = db.prepare('SELECT version FROM schema_migrations').pluck().all();
    expect(versions).toEqual(sqliteMigrations.map((m) => m.version));
    expect(migrateSqlite(db)).toEqual([]);
    // A later migration is applied on the next open, and only that one.
    const next = { version: 999, name: 'test', sql: 'CREATE TABLE later (x INTEGER)' };
    expect(migrateSqlite(db, [...sqliteMigrations, next])).toEqual([999]);
    expect(migrateSqlite(db, [...sqliteMigrations, next])).toEqual([]);
    db.close();
  });

  it('migration 11 keeps policy bindings, and the database itself refuses deleting a bound control', async () => {
    const file = join(dir, 'restrict', 'guard.db');
    const old = new SqliteStore(file);
    await old.createControl({ name: 'bound' });
    await old.createControl({ name: 'free' });
    await old.createPolicy({ name: 'p', controls: ['bound'], agents: { match_labels: {} } });
    await old.close();
    // Put the file back where migration 10 left it: the binding cascading on delete.
    const db = new Database(file);
    db.pragma('foreign_keys = ON');
    db.exec(`DELETE FROM schema_migrations WHERE version = 11;
      CREATE TABLE pc (policy_id INTEGER NOT NULL REFERENCES policies (policy_id) ON DELETE CASCADE, position INTEGER NOT NULL,
        control_id INTEGER NOT NULL REFERENCES controls (control_id) ON DELETE CASCADE, PRIMARY KEY (policy_id, control_id)) WITHOUT ROWID;
      INSERT INTO pc SELECT * FROM policy_controls; DROP TABLE policy_controls; ALTER TABLE pc RENAME TO policy_controls;`);
    expect(migrateSqlite(db)).toEqual([11]);
    expect(db.prepare('SELECT count(*) FROM policy_controls').pluck().get()).toBe(1);
    expect(() => db.prepare(`DELETE FROM controls WHERE name = 'bound'`).run()).toThrow(/FOREIGN KEY/);
    db.prepare(`DELETE FROM controls WHERE name = 'free'`).run();
    // A policy's delete still takes its bindings with it.
    db.prepare(`DELETE FROM policies WHERE name = 'p'`).run();
    db.prepare(`DELETE FROM controls WHERE name = 'bound'`).run();
    db.close();
  });

  it('migration 3 folds existing non-match rows into rollups, so upgraded stats keep counting them', async () => {
    const file = join(dir, 'upgrade', 'guard.db');
    mkdirSync(join(dir, 'upgrade'));
    const db = new Database(file);
    migrateSqlite(db, sqliteMigrations.filter((m) => m.version < 3));
    const insert = db.prepare(
      `INSERT INTO events (control_execution_id, trace_id, span_id, agent_name, control_id, control_name, check_stage,
         applies_to, action, matched, outcome, confidence, ts, execution_duration_ms, evaluator_name)
       VALUES (?, 't', 's', 'bot', 1, 'c1', 'pre', 'tool', 'deny', ?, ?, 1, ?, 2, 'regex')`,
    );
    const ts = Date.UTC(2025, 0, 1, 12, 0, 10);
    insert.run('m1', 1, 1, ts);
    insert.run('n1', 0, 0, ts);
    insert.run('n2', 0, 0, ts + 20_000);
    insert.run('n3', 0, 0, ts + 60_000);
    db.close();
    const store = new SqliteStore(file);
    const [row] = await store.controlStats({ since: '2025-01-01T12:00:00.000Z' });
    expect(row).toMatchObject({ executions: 4, matches: 1, non_matches: 3, avg_duration_ms: 2 });
    // The old rows stay readable, like sampled ones.
    expect((await store.queryEvents({ limit: 10, offset: 0, matched: false })).total).toBe(3);
    await store.close();
  });

  it('rolls back a failing migration completely', () => {
    const db = new Database(':memory:');
    const bad = { version: 1, name: 'bad', sql: 'CREATE TABLE t (x INTEGER); CREATE TABLE t (y INTEGER);' };
    expect(() => migrateSqlite(db, [bad])).toThrow();
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 't'").pluck().get()).toBe(0);
    expect(db.prepare('SELECT count(*) FROM schema_migrations').pluck().get()).toBe(0);
    db.close();
  });

  it('prunes in several batches', async () => {
    const store = new SqliteStore(':memory:', { pruneBatchSize: 7 });
    await store.insertEvents(
      Array.from({ length: 30 }, (_, i) => event({ timestamp: new Date(Date.UTC(2025, 0, 1, 0, i)).toISOString() })),
    );
    expect(await store.pruneEvents('2025-01-01T00:22:00.000Z')).toBe(22);
    expect((await store.queryEvents({ limit: 1, offset: 0 })).total).toBe(8);
    await store.close();
  });

  it('uses the stats indexes instead of scanning the table', () => {
    const db = new Database(':memory:');
    migrateSqlite(db);
    const plan = db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT count(*), total(execution_duration_ms) FROM events INDEXED BY events_stats
         WHERE control_id = 1 AND outcome = 1 AND action = 'deny' AND ts >= 0`,
      )
      .all() as Array<{ detail: string }>;
    expect(plan.map((p) => p.detail).join(' ')).toContain('COVERING INDEX events_stats');
    db.close();
  });

  // The event writer thread (and a second process) write to the same file. A transaction
  // that reads before it writes must take the write lock up front: a deferred one fails at
  // once with "database is locked" when the other connection committed in between, and no
  // busy timeout helps.
  it('lets writes wait for another thread writing the same file instead of failing', async () => {
    const file = join(dir, 'two-writers', 'guard.db');
    const store = new SqliteStore(file);
    // The worker writes bursts until told to stop, with a short pause between them as the
    // event writer has between batches; the test's writes run while it does.
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const worker = new Worker(
      `const { workerData, parentPort } = require('node:worker_threads');
       const Database = require(workerData.module);
       const db = new Database(workerData.file);
       db.pragma('busy_timeout = 5000');
       db.exec('CREATE TABLE IF NOT EXISTS noise (v INTEGER)');
       const insert = db.prepare('INSERT INTO noise (v) VALUES (?)');
       const burst = db.transaction((n) => { for (let i = 0; i < 50; i++) insert.run(n); });
       parentPort.postMessage('started');
       let n = 0;
       while (Atomics.load(workerData.stop, 0) === 0) {
         burst.immediate(n++);
         Atomics.wait(workerData.stop, 0, 0, 1);
       }
       db.close();
       parentPort.postMessage({ bursts: n });`,
      {
        eval: true,
        workerData: { file, stop, module: createRequire(import.meta.url).resolve('better-sqlite3') },
      },
    );
    const messages: unknown[] = [];
    worker.on('message', (m) => messages.push(m));
    await expect.poll(() => messages, { timeout: 30_000 }).toContain('started');
    const failures: string[] = [];
    for (let writes = 0; writes < 40; writes++) {
      try {
        await store.upsertAgent({ agent_name: `bot-${writes % 20}`, agent_description: `write ${writes}` });
      } catch (error) {
        failures.push(error instanceof Error ? error.message : String(error));
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    Atomics.store(stop, 0, 1);
    Atomics.notify(stop, 0);
    await expect.poll(() => messages.length, { timeout: 30_000 }).toBe(2);
    await worker.terminate();
    const agents = await store.listAgents();
    await store.close();
    expect(failures).toEqual([]);
    expect((messages[1] as { bursts: number }).bursts).toBeGreaterThan(0);
    expect(agents.map((a) => a.agent_name).sort()).toHaveLength(20);
  });
});
