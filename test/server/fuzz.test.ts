/**
 * Random requests on every route, on both stores: random JSON values, valid bodies with a
 * part swapped for a wrong type, a huge or odd string (NUL, lone surrogates), deep nesting,
 * random bytes; odd path parameters and query strings. Whatever comes in, the server
 * answers no 5xx, every 4xx is a problem body, and a refused write changes nothing stored
 * (agents, controls and links are compared before and after every refused write; accepted
 * writes move the baseline). Seeded: set GUARD_FUZZ_SEED to replay a failing run, whose
 * seed every failure message names.
 */
import { randomInt } from 'node:crypto';
import type { InjectOptions } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/types.js';
import { storeKinds } from './both-stores.js';
import { mutated, paramOf, pick, prngOf, queryOf, randomValue, validBodyOf, withOddString, type Rng } from './fuzz-inputs.js';
import { sqlControl } from './helpers.js';

const SEED = process.env.GUARD_FUZZ_SEED ? Number(process.env.GUARD_FUZZ_SEED) : randomInt(2 ** 31);
/** Requests per store; the run also stops after BUDGET_MS so it stays a few seconds on a busy machine. */
const REQUESTS = 400;
const BUDGET_MS = 4000;

/** Routes that never answer on their own (a live stream): not fuzzed. */
const SKIPPED = new Set(['GET /api/v1/observability/events/stream']);

async function storedState(store: Store) {
  const [controls, agents, links] = await Promise.all([store.listAllControls(), store.listAgents(), store.listLinks()]);
  return { controls, agents, links };
}

function requestOf(rng: Rng, method: string, url: string, known: { agent: string; controlId: number }): InjectOptions {
  const path = url.replace(/:(\w+)/g, (_, param: string) => paramOf(rng, param, known));
  const options: InjectOptions = { method, url: path + queryOf(rng) };
  if (method === 'GET' || method === 'DELETE') return options;
  const roll = rng();
  if (roll < 0.1) {
    // Random bytes, declared as JSON.
    options.payload = Buffer.from(Array.from({ length: 1 + Math.floor(rng() * 64) }, () => Math.floor(rng() * 256)));
    options.headers = { 'content-type': 'application/json' };
  } else {
    const valid = validBodyOf(`${method} ${url}`, rng, known.controlId);
    const body = roll < 0.2 ? valid : roll < 0.3 ? randomValue(rng) : roll < 0.65 ? withOddString(rng, valid) : mutated(rng, valid);
    options.payload = JSON.stringify(body) ?? 'null';
    options.headers = { 'content-type': 'application/json' };
  }
  return options;
}

for (const target of storeKinds()) {
  describe.skipIf(target.skip !== null)(target.skip ?? `fuzz on ${target.kind}`, () => {
    afterAll(() => target.cleanup());

    it(`answers every random request without a 5xx, with problem bodies, losing nothing (seed ${SEED})`, async () => {
      const server = await target.open();
      try {
        const { app, store } = server;
        const created = await app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'fuzz-control', data: sqlControl() } });
        const controlId = (JSON.parse(created.body) as { control_id: number }).control_id;
        await app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'fuzz-bot' } });
        await app.inject({ method: 'POST', url: `/api/v1/agents/fuzz-bot/controls/${controlId}` });
        const known = { agent: 'fuzz-bot', controlId };

        const routes = app.registeredRoutes.filter((r) => !SKIPPED.has(`${r.method} ${r.url}`));
        const rng = prngOf(SEED + (target.kind === 'postgres' ? 1 : 0));
        let before = await storedState(store);
        const started = Date.now();
        let sent = 0;
        for (; sent < REQUESTS && Date.now() - started < BUDGET_MS; sent++) {
          // Every route in turn, each time with other inputs.
          const route = sent < routes.length ? routes[sent]! : pick(rng, routes);
          const request = requestOf(rng, route.method, route.url, known);
          const res = await app.inject(request);
          const where = `seed ${SEED} (GUARD_FUZZ_SEED=${SEED} to replay), request ${sent}: ${request.method} ${(request.url as string).slice(0, 200)} -> ${res.statusCode} ${res.body.slice(0, 300)}`;
          expect(res.statusCode, where).toBeLessThan(500);
          if (res.statusCode >= 400) {
            expect(res.headers['content-type'], where).toContain('application/problem+json');
            expect(JSON.parse(res.body), where).toMatchObject({ status: res.statusCode, error_code: expect.any(String) });
          }
          if (request.method === 'GET') continue;
          const after = await storedState(store);
          if (res.statusCode >= 400) expect(after, `a refused write changed what is stored; ${where}`).toEqual(before);
          before = after;
        }
        expect(sent, `seed ${SEED}: every route at least once`).toBeGreaterThanOrEqual(routes.length);
        // The seeded agent is still served whole, through the API as from the store.
        const listed = await app.inject({ method: 'GET', url: '/api/v1/agents' });
        expect(JSON.parse(listed.body)).toEqual(JSON.parse(JSON.stringify({ agents: before.agents })));
      } finally {
        await server.close();
      }
    });
  });
}
