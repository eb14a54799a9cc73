/**
 * The review's finding: one regex control on a long step held the whole server, /health
 * included. Long texts are searched off the event loop (evaluators/regex/search-pool.ts),
 * so the built server, in a process of its own, answers other requests while the worst
 * kind of pattern the limits allow scans a 400 KB step. Asserted by the order of answers.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltBinary, startServeProcess, type ServeProcess } from './serve-process.js';

let server: ServeProcess | undefined;
beforeAll(requireBuiltBinary);
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** Random x and y: RE2's DFA cannot cache its way through x.{190}z on it. */
function randomXY(length: number): string {
  const bytes = randomBytes(length);
  for (let i = 0; i < length; i++) bytes[i] = bytes[i]! & 1 ? 0x78 : 0x79;
  return bytes.toString('latin1');
}

const CONTROLS = `kind: Control
name: wide
selector: { path: input.text }
evaluator: { name: regex, config: { pattern: 'x.{190}z' } }
action: { decision: deny }
---
kind: Agent
agent_name: bot
controls: [wide]
`;

describe('a slow regex evaluation', () => {
  it('does not hold /health or other evaluations, and still decides', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'guard-stall-'));
    writeFileSync(join(dir, 'controls.yaml'), CONTROLS);
    server = await startServeProcess({ args: ['--db', ':memory:', '--watch', dir] });
    const evaluate = (text: string) =>
      fetch(`${server!.url}/api/v1/evaluation`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 't', input: { text } } }),
      }).then((r) => r.json() as Promise<{ decision: string }>);

    const order: string[] = [];
    // The match is at the very end: all 400 KB are scanned, which takes RE2 a good part of a second.
    const slow = evaluate(`${randomXY(400 * 1024)}x${'y'.repeat(190)}z`).then((r) => (order.push('slow evaluation'), r));
    // Time for the request to arrive and its search to start.
    await new Promise((resolve) => setTimeout(resolve, 150));
    const health = fetch(`${server.url}/health`).then((r) => (order.push('health'), r.status));
    const quick = evaluate('short and clean').then((r) => (order.push('quick evaluation'), r));
    const [slowResult, healthStatus, quickResult] = await Promise.all([slow, health, quick]);
    expect(slowResult.decision).toBe('deny');
    expect(healthStatus).toBe(200);
    expect(quickResult.decision).toBe('allow');
    expect(order.at(-1)).toBe('slow evaluation');
  });
});
