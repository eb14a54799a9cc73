import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { assembleServer } from '../../src/server/assemble.js';
import { loadConfig } from '../../src/server/config.js';
import { humanLogLine, serverLoggerOptions } from '../../src/server/logging.js';
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

describe('log formats', () => {
  it('a human line: time, level, message, fields; listed problems and an error stack below', () => {
    const time = Date.UTC(2026, 0, 1, 10, 0, 5, 120);
    expect(humanLogLine({ level: 40, time, pid: 1, hostname: 'h', dir: 'controls', errors: ['controls/a.yaml:4:1: bad', 'controls/b.yaml:1:1: worse'], msg: 'hot reload failed (2 errors)' })).toBe(
      '2026-01-01T10:00:05.120Z WARN  hot reload failed (2 errors)  dir=controls\n    controls/a.yaml:4:1: bad\n    controls/b.yaml:1:1: worse\n',
    );
    expect(humanLogLine({ level: 30, time, msg: 'shutting down', signal: 'SIGTERM', note: 'two words', n: 3 })).toBe(
      '2026-01-01T10:00:05.120Z INFO  shutting down  signal=SIGTERM note="two words" n=3\n',
    );
    const failed = humanLogLine({ level: 50, time, method: 'GET', err: { type: 'Error', message: 'disk on fire', stack: 'Error: disk on fire\n    at read (store.js:1:1)' }, msg: 'request failed' });
    expect(failed).toBe('2026-01-01T10:00:05.120Z ERROR request failed  method=GET error="disk on fire"\n    at read (store.js:1:1)\n');
  });

  it('guardctl serve logs human lines by default and JSON lines when asked, the same records either way', async () => {
    for (const format of ['human', 'json'] as const) {
      let text = '';
      const out = { write: (chunk: string) => (text += chunk) };
      const config = loadConfig({ OBSERVABILITY_ENABLED: 'false', GUARD_LOG_FORMAT: format });
      const options = serverLoggerOptions(config, out) as Record<string, unknown>;
      const real = await openStore(':memory:');
      const store = new Proxy(real, {
        get: (target, prop, receiver) => (prop === 'listAgents' ? async () => { throw new Error('disk on fire'); } : Reflect.get(target, prop, receiver)),
      });
      const { app, close } = await assembleServer(config, { store, registry: createDefaultRegistry(), observability: false, logger: options.stream ? options : { ...options, stream: out } });
      await app.listen({ host: '127.0.0.1', port: 0 });
      await app.inject({ url: '/api/v1/agents' });
      await close();
      // Fastify's own "Server listening at" line is left to the server's start line.
      expect(text).not.toContain('Server listening');
      const lines = text.trimEnd().split('\n');
      if (format === 'human') {
        expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z ERROR request failed {2}error="disk on fire" method=GET url=\/api\/v1\/agents$/);
      } else {
        expect(JSON.parse(lines[0]!)).toMatchObject({ level: 50, msg: 'request failed', method: 'GET', err: { message: 'disk on fire' } });
      }
    }
  });
});
