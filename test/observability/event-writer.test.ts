import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../src/model/index.js';
import { workerWriter } from '../../src/observability/event-writer.js';
import { createObservability } from '../../src/observability/observability.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { makeConfig, makeEvent } from './fixtures.js';

// Node runs the writer thread from compiled JavaScript; tests run from TypeScript sources,
// so the worker's module graph (src/) is transpiled into a scratch directory first.
const root = join(import.meta.dirname, '..', '..');
let scratch: string;
let workerUrl: URL;

function listTs(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? listTs(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
  );
}

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'guard-writer-'));
  for (const file of listTs(join(root, 'src'))) {
    const out = join(scratch, relative(root, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(out), { recursive: true });
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    });
    writeFileSync(out, outputText);
  }
  writeFileSync(join(scratch, 'package.json'), '{"type":"module"}');
  symlinkSync(join(root, 'node_modules'), join(scratch, 'node_modules'), 'dir');
  workerUrl = pathToFileURL(join(scratch, 'src', 'observability', 'event-writer-worker.js'));
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

/** A fresh SQLite file for one test; `remove` closes the test's own connection and deletes it. */
function eventsDb(): { file: string; store: SqliteStore; remove(): Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), 'guard-writer-db-'));
  const file = join(dir, 'events.db');
  const store = new SqliteStore(file);
  return {
    file,
    store,
    async remove() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe('event writer thread', () => {
  it('writes, prunes and flushes on close through its own SQLite connection', async () => {
    const { file, store, remove } = eventsDb();
    const obs = createObservability({ store, config: makeConfig(), processMetrics: false, sqlitePath: file, workerUrl });
    try {
      expect(obs.writerKind).toBe('worker');
      const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
      // Even-numbered events match (rows); odd ones are non-matches (rolled up per minute).
      obs.ingest(Array.from({ length: 2500 }, (_, i) => makeEvent(i, i < 100 ? { timestamp: old } : {})));
      await obs.flush();
      // Written by the worker, read through the server's connection.
      expect((await store.queryEvents({ limit: 1, offset: 0 })).total).toBe(1250);
      const since = new Date(Date.now() - 50 * 86_400_000).toISOString();
      expect((await store.controlStats({ since }))[0]).toMatchObject({ matches: 1250, non_matches: 1250 });
      // 50 old match rows and the one rollup row of the old non-matches.
      expect(await obs.prune()).toBe(51);
      obs.ingest([makeEvent(9999)]);
      await obs.close();
      expect((await store.queryEvents({ limit: 1, offset: 0 })).total).toBe(1200);
      expect((await store.controlStats({ since }))[0]).toMatchObject({ matches: 1200, non_matches: 1201 });
      expect(await obs.metrics.registry.getSingleMetricAsString('guard_events_written_total')).toContain(
        'guard_events_written_total 2501',
      );
    } finally {
      await obs.close();
      await remove();
    }
  });

  it('stores every field of the events it is handed as they were, across the thread', async () => {
    const { file, store, remove } = eventsDb();
    const writer = workerWriter({ sqlitePath: file, workerUrl, fallback: store });
    const written: StoredEvent[] = [
      makeEvent(0, { timestamp: '2026-11-29T06:12:03.007Z', metadata: { matched_text: '[masked]', count: 2 }, set_revision: 7, mode: 'enforce' }),
      makeEvent(1, { timestamp: '2026-11-29T06:12:03.450Z', selector_missing: true, evaluator_name: null, selector_path: null, set_revision: null }),
      { ...makeEvent(2, { timestamp: '2026-11-29T06:12:04.000Z', mode: 'shadow', confidence: 0.25 }), example: '{"input":{"query":"DROP TABLE t"}}' },
      makeEvent(3, { timestamp: '2026-11-29T06:12:04.999Z', matched: false, error_message: 'evaluator error: timeout', action: 'steer', check_stage: 'post', applies_to: 'llm' }),
    ];
    try {
      await writer.write(written);
      expect(writer.kind).toBe('worker');
      const { events } = await store.queryEvents({ limit: 10, offset: 0 });
      const byId = new Map(events.map((e) => [e.control_execution_id, e]));
      for (const e of written) {
        const { example, ...rest } = e;
        expect(byId.get(e.control_execution_id)).toMatchObject({ ...rest, mode: e.mode ?? 'enforce', set_revision: e.set_revision ?? null });
        if (example !== undefined) expect(await store.queryEvents({ limit: 1, offset: 0, with_example: true })).toMatchObject({ events: [{ control_execution_id: e.control_execution_id }] });
      }
      expect(byId.get('exec-0')).not.toHaveProperty('selector_missing');
    } finally {
      await writer.close();
      await remove();
    }
  });

  it('hands events to the thread once 64 wait, without waiting for the timer', async () => {
    const { file, store, remove } = eventsDb();
    // The timer is never started (no start()): only the handover can write.
    const obs = createObservability({ store, config: makeConfig(), processMetrics: false, sqlitePath: file, workerUrl });
    const rows = async () => (await store.queryEvents({ limit: 1, offset: 0 })).total;
    try {
      // Matches only (each one a row), of a warn control: a matched deny is urgent and would
      // be written within DENY_FLUSH_MS whatever the count. 63 wait, and stay waiting.
      obs.ingest(Array.from({ length: 63 }, (_, i) => makeEvent(2 * i, { action: 'warn' })));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await rows()).toBe(0);
      expect(obs.buffer.size).toBe(63);
      // The 64th starts the handover.
      obs.ingest([makeEvent(200, { action: 'warn' })]);
      await expect.poll(rows).toBe(64);
      // The rows are visible before the thread's answer reaches this one; the buffer
      // lets the events go on that answer.
      await expect.poll(() => obs.buffer.size).toBe(0);
    } finally {
      await obs.close();
      await remove();
    }
  });

  it('falls back to writing inline when the thread dies', async () => {
    const broken = join(scratch, 'broken-worker.js');
    writeFileSync(broken, 'throw new Error("cannot start");\n');
    const { file, store, remove } = eventsDb();
    const obs = createObservability({
      store,
      config: makeConfig(),
      processMetrics: false,
      sqlitePath: file,
      workerUrl: pathToFileURL(broken),
    });
    try {
      obs.ingest([makeEvent(1), makeEvent(2)]);
      await obs.flush();
      await expect.poll(() => obs.writerKind).toBe('inline');
      obs.ingest([makeEvent(3)]);
      await obs.close();
      // The first batch may have been lost with the thread (counted as write_failed); later ones are stored.
      const text = await obs.metrics.registry.metrics();
      const written = Number(/guard_events_written_total (\d+)/.exec(text)![1]);
      const failed = Number(/guard_events_dropped_total\{reason="write_failed"\} (\d+)/.exec(text)?.[1] ?? 0);
      expect(written + failed).toBe(3);
      // Rows (matches) and rolled-up non-matches together are what was written.
      const rows = (await store.queryEvents({ limit: 10, offset: 0 })).total;
      const nonMatches = (await store.controlStats({ since: '2000-01-01T00:00:00.000Z' })).reduce((n, r) => n + r.non_matches, 0);
      expect(rows + nonMatches).toBe(written);
      expect(written).toBeGreaterThanOrEqual(1);
    } finally {
      await remove();
    }
  });

  it('uses no thread for in-memory stores', async () => {
    const store = new SqliteStore(':memory:');
    const obs = createObservability({ store, config: makeConfig(), processMetrics: false, sqlitePath: ':memory:', workerUrl });
    expect(obs.writerKind).toBe('inline');
    await obs.close();
    await store.close();
  });
});
