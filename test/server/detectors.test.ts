/**
 * The pii and secrets evaluators through a real server: configs refused with field paths on
 * PUT and validate, and decisions whose answers show kinds and counts, with what was found
 * masked everywhere (message, excerpt).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, json, seedAgentWithControl, sqlControl, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  await server.close();
});

const fieldsOf = (res: { body: string }) => (JSON.parse(res.body) as { errors: Array<{ field: string }> }).errors.map((e) => e.field);

describe('pii and secrets configs', () => {
  it('answers 422 naming an unknown kind, on PUT and on validate', async () => {
    const bad = sqlControl({ selector: { path: 'input' }, evaluator: { name: 'pii', config: { kinds: ['email', 'passport'] } } });
    const put = await call(server.app, 'PUT', '/api/v1/controls', { name: 'bad-pii', data: bad });
    expect(put.statusCode).toBe(422);
    expect(fieldsOf(put)).toEqual(['data.evaluator.config.kinds[1]']);
    const secrets = sqlControl({ selector: { path: 'input' }, evaluator: { name: 'secrets', config: { kinds: ['azure'] } } });
    const validate = await call(server.app, 'POST', '/api/v1/controls/validate', { data: secrets });
    expect(validate.statusCode).toBe(422);
    expect(fieldsOf(validate)).toEqual(['data.evaluator.config.kinds[0]']);
  });

  it('lists both evaluators with their config schemas', async () => {
    const res = await call(server.app, 'GET', '/api/v1/evaluators');
    const byName = new Map((json(res).evaluators as Array<{ name: string; config_schema: { properties: object } }>).map((e) => [e.name, e]));
    expect(Object.keys(byName.get('pii')!.config_schema.properties)).toEqual(['kinds', 'min_count', 'phone_region']);
    expect(Object.keys(byName.get('secrets')!.config_schema.properties)).toEqual(['kinds', 'min_entropy', 'allow_placeholders']);
  });
});

describe('pii and secrets decisions', () => {
  const evaluate = (input: unknown) =>
    call(server.app, 'POST', '/api/v1/evaluation', { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'pay', input } });

  it('denies a real card number, allows a Luhn-invalid order id, and masks the number', async () => {
    await seedAgentWithControl(
      server.app,
      'support-bot',
      'cards',
      sqlControl({ scope: {}, selector: { path: 'input' }, evaluator: { name: 'pii', config: { kinds: ['credit_card', 'us_ssn'] } } }),
    );
    const order = await evaluate({ order_id: '1234 5678 9012 3456' });
    expect(json(order)).toMatchObject({ decision: 'allow', matches: [] });
    const card = await evaluate({ note: 'card 4111-1111-1111-1111 exp 12/29' });
    expect(card.statusCode).toBe(200);
    const body = json(card);
    expect(body.decision).toBe('deny');
    expect(body.matches[0].result.message).toBe('found credit_card (1) "4111…1111"');
    expect(body.matches[0].result.metadata).toEqual({ counts: { credit_card: 1 }, total: 1 });
    expect(card.body).not.toContain('4111-1111-1111-1111');
  });

  it('denies a cloud key in a JSON string and never echoes it', async () => {
    await seedAgentWithControl(
      server.app,
      'support-bot',
      'keys',
      sqlControl({ scope: {}, selector: { path: 'input' }, evaluator: { name: 'secrets', config: { min_entropy: 3.5 } } }),
    );
    const res = await evaluate({ config: '{"aws":"AKIAQWERTYUIOPASDF7Z"}' });
    const body = json(res);
    expect(body.decision).toBe('deny');
    expect(body.matches[0].result.message).toBe('found aws_access_key (1) "AKIA…DF7Z"');
    expect(res.body).not.toContain('AKIAQWERTYUIOPASDF7Z');
    expect(json(await evaluate({ config: 'password=aaaaaaaa' }))).toMatchObject({ decision: 'allow' });
  });
});
