/**
 * One event the database refuses must not take its batch with it: on both stores a
 * trigger refuses one row of 101; the other 100 are stored, the refused one is counted
 * as dropped (reason rejected) and logged.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { assembleServer, type AssembledServer } from '../../src/server/assemble.js';
import { loadConfig } from '../../src/server/config.js';
import { openStore } from '../../src/store/open-store.js';
import { createSchema, dropSchemas, pgRequired, pgUnreachable, pgUrl, schemaUrl, skipReasonOf } from '../replicas/pg.js';
import { makeEvent } from './fixtures.js';

const unreachable = await pgUnreachable();
const pgSkip = unreachable !== null && !pgRequired ? skipReasonOf(unreachable) : null;

const schemas: string[] = [];
const dirs: string[] = [];
let server: AssembledServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  if (!unreachable) await dropSchemas(schemas);
});

/** A database URL whose events table refuses rows named "poison", as a real database refuses a row. */
const targets: Array<{ kind: string; skip: string | null; poisoned(): Promise<string> }> = [
  {
    kind: 'sqlite',
    skip: null,
    async poisoned() {
      const dir = mkdtempSync(join(tmpdir(), 'guard-rows-'));
      dirs.push(dir);
      const path = join(dir, 'guard.db');
      await (await openStore(path)).close();
      const db = new Database(path);
      db.exec(`CREATE TRIGGER poison BEFORE INSERT ON events WHEN NEW.control_name = 'poison'
               BEGIN SELECT RAISE(ABORT, 'poisoned row'); END`);
      db.close();
      return path;
    },
  },
  {
    kind: 'postgres',
    skip: pgSkip,
    async poisoned() {
      const schema = await createSchema(schemas);
      await (await openStore(schemaUrl(schema))).close();
      const client = new pg.Client({ connectionString: pgUrl });
      await client.connect();
      await client.query(`CREATE FUNCTION "${schema}".poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.control_name = 'poison' THEN RAISE EXCEPTION 'poisoned row'; END IF; RETURN NEW; END $$`);
      await client.query(`CREATE TRIGGER poison BEFORE INSERT ON "${schema}".events FOR EACH ROW EXECUTE FUNCTION "${schema}".poison()`);
      await client.end();
      return schemaUrl(schema);
    },
  },
];

for (const target of targets) {
  describe.skipIf(target.skip !== null)(target.skip ?? `a refused event on ${target.kind}`, () => {
    it('stores the rest of its batch and counts the refused one as dropped (rejected), with a log line', async () => {
      const lines: string[] = [];
      const config = loadConfig({ DATABASE_URL: await target.poisoned(), OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '3600' });
      server = await assembleServer(config, {
        registry: createDefaultRegistry(),
        observability: { processMetrics: false, writerThread: false },
        logger: { level: 'warn', stream: { write: (line: string) => void lines.push(line) } },
      });
      const events = Array.from({ length: 101 }, (_, i) => makeEvent(i, i === 60 ? { matched: true, control_name: 'poison' } : { matched: true }));
      const ingest = await server.app.inject({ method: 'POST', url: '/api/v1/observability/events', payload: { events } });
      expect(ingest.statusCode).toBe(202);
      await server.observability!.flush();

      const stored = await server.store.queryEvents({ limit: 1000, offset: 0 });
      expect(stored.total).toBe(100);
      expect(stored.events.map((e) => e.control_execution_id)).not.toContain('exec-60');
      const metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toContain('guard_events_dropped_total{reason="rejected"} 1');
      expect(metrics).not.toContain('reason="write_failed"');
      expect(lines.join('')).toContain('refused 1 of 101 events');
      // The refusal is logged, never the event's data.
      expect(lines.join('')).not.toContain('exec-60');
    });
  });
}
