/**
 * Spans are POSTed from a worker thread (src/tracing/export-thread.ts): what the exporter
 * promised on the server's thread still holds. forceFlush resolves once the collector
 * answered; the thread holds the process only while a POST is in flight and ends with
 * shutdown; a refusing or hanging collector is counted as export_failed, and the next
 * batch goes out all the same.
 */
import { readdirSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { tracingConfigOf, type TracingConfig } from '../../src/tracing/config.js';
import { startTracing, type Tracing } from '../../src/tracing/start.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A collector that answers each POST with what `status` says when `answer` is called, and counts the answers. */
async function collector(status: () => number) {
  const held: ServerResponse[] = [];
  const seen = { requests: 0, answered: 0 };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.requests++;
      held.push(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const answer = () => {
    for (const res of held.splice(0)) res.writeHead(status()).end('{}', () => seen.answered++);
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, answer };
}

async function tracing(endpoint: string, env: Record<string, string> = {}): Promise<Tracing> {
  const t = await startTracing(tracingConfigOf({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_TRACES_SAMPLER: 'always_on', ...env }) as TracingConfig);
  cleanups.push(() => t.shutdown(100));
  return t;
}

/** Threads of this process (Linux): a worker thread is one of them while it runs. */
const threads = () => readdirSync('/proc/self/task').length;
/** Handles that keep the event loop alive and belong to a worker (its port, while ref'd). */
const heldPorts = () => (process as unknown as { _getActiveHandles(): object[] })._getActiveHandles().filter((h) => h.constructor.name === 'MessagePort').length;

describe('the export thread', () => {
  it('delivers a span, and forceFlush resolves only after the collector answered', async () => {
    const otlp = await collector(() => 200);
    const t = await tracing(otlp.url);
    t.startSpan('guardctl.reload', 0, null).end();
    let flushed = false;
    const flushing = t.forceFlush().then(() => (flushed = true));
    await expect.poll(() => otlp.seen.requests).toBe(1);
    expect(flushed).toBe(false);
    otlp.answer();
    await flushing;
    expect(otlp.seen.answered).toBe(1);
    expect(t.dropped()).toEqual({ queue_full: 0, export_failed: 0 });
  });

  it.runIf(process.platform === 'linux')('holds the process only while a POST is in flight, and shutdown ends the thread', async () => {
    const otlp = await collector(() => 200);
    const before = { threads: threads(), ports: heldPorts() };
    const t = await tracing(otlp.url);
    t.startSpan('a', 0, null).end();
    const flushing = t.forceFlush();
    await expect.poll(() => otlp.seen.requests).toBe(1);
    // In flight: held, as the socket of a request made on this thread would hold it.
    expect(heldPorts()).toBe(before.ports + 1);
    otlp.answer();
    await flushing;
    // Idle: the thread runs, and nothing of it keeps the process alive.
    expect(threads()).toBe(before.threads + 1);
    expect(heldPorts()).toBe(before.ports);
    await t.shutdown(100);
    expect(threads()).toBe(before.threads);
  });

  it('counts a batch refused (503) or held past shutdown by a hanging collector as export_failed, and sends the next', async () => {
    let status = 503;
    const otlp = await collector(() => status);
    const t = await tracing(otlp.url);
    for (let i = 0; i < 3; i++) t.startSpan('refused', 0, null).end();
    const refused = t.forceFlush();
    await expect.poll(() => otlp.seen.requests).toBe(1);
    otlp.answer();
    await refused;
    expect(t.dropped()).toEqual({ queue_full: 0, export_failed: 3 });

    status = 200;
    t.startSpan('taken', 0, null).end();
    const taken = t.forceFlush();
    await expect.poll(() => otlp.seen.requests).toBe(2);
    otlp.answer();
    await taken;
    expect(t.dropped()).toEqual({ queue_full: 0, export_failed: 3 });

    // Never answered: the shutdown's own time limit ends the wait, and the batch is counted.
    t.startSpan('hung', 0, null).end();
    void t.forceFlush();
    await expect.poll(() => otlp.seen.requests).toBe(3);
    await t.shutdown(100);
    await expect.poll(() => t.dropped()).toEqual({ queue_full: 0, export_failed: 4 });
  });
});
