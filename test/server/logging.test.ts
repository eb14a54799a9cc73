import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { assembleServer } from '../../src/server/assemble.js';
import { loadConfig } from '../../src/server/config.js';
import { serverLoggerOptions } from '../../src/server/start.js';
import { openStore } from '../../src/store/open-store.js';

/** The app with `guardctl serve`'s logger (DEBUG on or off), its lines collected. */
async function loggedApp(debug: boolean) {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const real = await openStore(':memory:');
  // listAgents fails: GET /api/v1/agents answers 500 and logs an error.
  const store = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'listAgents') return async () => { throw new Error('disk on fire'); };
      return Reflect.get(target, prop, receiver);
    },
  });
  const config = loadConfig({ OBSERVABILITY_ENABLED: 'false', ...(debug ? { DEBUG: 'true' } : {}) });
  const options = serverLoggerOptions(config) as Record<string, unknown>;
  const { app, close } = await assembleServer(config, { store, registry: createDefaultRegistry(), observability: false, logger: { ...options, stream } });
  return { app, lines, close };
}

describe('request logging', () => {
  it('at the default level logs failures with their method and route, and no per-request lines', async () => {
    const { app, lines, close } = await loggedApp(false);
    try {
      expect((await app.inject({ url: '/health' })).statusCode).toBe(200);
      expect((await app.inject({ url: '/api/v1/agents' })).statusCode).toBe(500);
      expect(lines.map((l) => l.msg)).toEqual(['request failed']);
      expect(lines[0]).toMatchObject({ level: 50, method: 'GET', url: '/api/v1/agents', err: { message: 'disk on fire' } });
      // Fastify has no logger at this level (app.ts, quietLogger): so no request id.
      expect(lines[0]!.reqId).toBeUndefined();
    } finally {
      await close();
    }
  });

  it('with DEBUG logs each request, arrival and answer, under one request id', async () => {
    const { app, lines, close } = await loggedApp(true);
    try {
      await app.inject({ url: '/health' });
      const requestLines = lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed');
      expect(requestLines).toHaveLength(2);
      expect(requestLines[0]!.reqId).toBeDefined();
      expect(requestLines[1]!.reqId).toBe(requestLines[0]!.reqId);
      // A failure's line carries its request's id too.
      expect((await app.inject({ url: '/api/v1/agents' })).statusCode).toBe(500);
      const failed = lines.find((l) => l.msg === 'request failed');
      expect(failed).toMatchObject({ level: 50, method: 'GET', url: '/api/v1/agents', err: { message: 'disk on fire' } });
      expect(failed!.reqId).toBeDefined();
    } finally {
      await close();
    }
  });
});
