/**
 * Live stream subscribers that never read (issue #34.14): each one that falls behind (its
 * socket stopped taking frames and its queue is full) is dropped at once, not waited for
 * and not kept until the stall timeout, and the drops are counted in a metric. Evaluations
 * go on answering, and a subscriber that reads keeps its stream.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { EvaluationSummary } from '../../src/model/index.js';
import { addControl, denySql, evaluation, makeApp, type TestApp } from './app-helper.js';

let t: TestApp | undefined;
const sockets: net.Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await t?.close();
  t = undefined;
});

function summary(i: number, padding: string): EvaluationSummary {
  return {
    id: `ev-${i}`, timestamp: new Date().toISOString(), trace_id: 't', agent_name: 'support-bot', step_name: `step-${i}${padding}`,
    step_type: 'tool', stage: 'pre', decision: 'deny', duration_ms: 0.1, evaluated: 1, matches: [], errors: [],
  } as unknown as EvaluationSummary;
}

/** A raw subscriber; `reading` false stops reading once the stream is open. */
async function subscribe(port: number, reading: boolean): Promise<{ socket: net.Socket; received: () => string }> {
  const socket = net.connect(port, '127.0.0.1');
  sockets.push(socket);
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString()));
  socket.on('error', () => undefined);
  socket.write('GET /api/v1/observability/events/stream HTTP/1.1\r\nHost: localhost\r\n\r\n');
  await expect.poll(() => text).toContain(': connected');
  if (!reading) socket.pause();
  return { socket, received: () => text };
}

describe('subscribers that fall behind', () => {
  it('are dropped and counted; evaluations answer; a reading subscriber stays', async () => {
    // A stall timeout far longer than the test: only falling behind can drop them.
    t = await makeApp({}, { stream: { queueSize: 8, stallMs: 3_600_000 } });
    await addControl(t.store, 'support-bot', 'block-sql', denySql);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as AddressInfo;
    const idle = 20;
    for (let i = 0; i < idle; i++) await subscribe(port, false);
    const reader = await subscribe(port, true);
    const hub = t.observability.hub;
    expect(hub.size).toBe(idle + 1);

    const padding = 'x'.repeat(16_000);
    let i = 0;
    // Kernel buffers take some megabytes per socket before a write is refused. A few frames
    // per turn, as evaluations arrive: the reading subscriber drains between turns.
    await expect
      .poll(() => {
        for (let k = 0; k < 4 && hub.size > 1; k++) hub.publishEvaluation(summary(i++, padding));
        return hub.size;
      }, { timeout: 50_000, interval: 5 })
      .toBe(1);

    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(new RegExp(`guard_stream_subscribers_dropped_total\\{reason="behind"\\} ${idle}\\b`));
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation('DROP TABLE x') });
    expect(res.json()).toMatchObject({ decision: 'deny' });
    // The reader gets the evaluation just made.
    await expect.poll(() => reader.received().includes('"decision":"deny"') && reader.received().includes('run_sql'), { timeout: 30_000 }).toBe(true);
    // The dropped subscribers' connections were closed by the server: reading again, each
    // finds the end of its stream after what its buffers held.
    const closed = sockets.slice(0, idle).map((s) => new Promise<void>((resolve) => {
      s.once('close', () => resolve());
      s.resume();
    }));
    await Promise.all(closed);
  }, 90_000);
});
