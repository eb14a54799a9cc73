import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, json, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ observability: true });
});
afterAll(async () => {
  await server.close();
});

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.1 document with the model schemas as components', async () => {
    const res = await call(server.app, 'GET', '/openapi.json');
    expect(res.statusCode).toBe(200);
    const doc = json(res);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.components.schemas.ControlData.properties.action).toBeDefined();
    expect(doc.components.schemas.EvaluationRequest.required).toEqual(expect.arrayContaining(['agent_name', 'stage', 'step']));
    expect(JSON.stringify(doc)).not.toContain('__shared');
  });

  it('documents every registered route with the access level auth enforces', async () => {
    const doc = json(await call(server.app, 'GET', '/openapi.json'));
    const missing: string[] = [];
    for (const route of server.app.registeredRoutes) {
      const path = route.url.replace(/:(\w+)/g, '{$1}');
      const op = doc.paths[path]?.[route.method.toLowerCase()];
      if (!op || op['x-access'] !== route.access) missing.push(`${route.method} ${route.url} (${route.access})`);
    }
    expect(missing).toEqual([]);
  });
});

describe('system routes', () => {
  it('GET /health is healthy with a version', async () => {
    expect(json(await call(server.app, 'GET', '/health'))).toEqual({ status: 'healthy', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  });

  it('GET /api/v1/evaluators lists the built-ins with config schemas', async () => {
    const body = json(await call(server.app, 'GET', '/api/v1/evaluators'));
    const names = body.evaluators.map((e: { name: string }) => e.name);
    expect(names).toEqual(expect.arrayContaining(['regex', 'list']));
    expect(body.evaluators[0].config_schema).toBeTypeOf('object');
  });
});
