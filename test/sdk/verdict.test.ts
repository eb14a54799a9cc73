import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ControlSteerError,
  ControlViolationError,
  init,
  type Disclosure,
  type GuardAgent,
  type GuardLogger,
  type InitOptions,
} from '../../src/sdk/index.js';
import { seedSupportBot, startRealServer, type RunningServer } from './real-server.js';

const quiet: GuardLogger = { info: () => undefined, warn: () => undefined };
let server: RunningServer;
const agents: GuardAgent[] = [];

async function start(options: Partial<InitOptions> = {}): Promise<GuardAgent> {
  const agent = await init({ agentName: 'support-bot', serverUrl: server.url, refreshIntervalSeconds: 0, logger: quiet, ...options });
  agents.push(agent);
  return agent;
}

const drop = { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE orders' } } as const;
const ssn = { type: 'llm', name: 'chat', input: 'my ssn is 123-45-6789' } as const;

beforeEach(async () => {
  server = await startRealServer();
  await seedSupportBot(server.client);
});

afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.shutdown();
  await server.close();
});

describe('guard.verdict', () => {
  it('answers allow, deny and steer without throwing', async () => {
    const guard = await start();
    expect(await guard.verdict({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre')).toMatchObject({
      decision: 'allow', control_name: null, message: null, steering_context: null, unavailable: false,
    });
    const deny = await guard.verdict(drop, 'pre');
    expect(deny).toMatchObject({ decision: 'deny', control_name: 'block-drop', unavailable: false });
    expect(deny.detail).toMatch(/pattern matched/);
    expect(deny.result?.decision).toBe('deny');
    const steer = await guard.verdict(ssn, 'pre');
    expect(steer).toMatchObject({
      decision: 'steer',
      control_name: 'steer-ssn',
      steering_context: { message: 'remove the social security number', required_actions: ['redact_pii'] },
    });
  });

  it('puts the steering message and every required action in the text the model reads', async () => {
    const guard = await start();
    const steer = await guard.verdict(ssn, 'pre');
    expect(steer.message).toContain('remove the social security number');
    expect(steer.message).toContain('Required actions:\n- redact_pii');
    const error = await guard.check(ssn, 'pre').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ControlSteerError);
    expect((error as Error).message).toBe(steer.message);
  });

  it('fails closed as a deny verdict when the server is down, without saying where it is', async () => {
    const guard = await start();
    await server.close();
    const verdict = await guard.verdict(ssn, 'pre');
    expect(verdict).toMatchObject({ decision: 'deny', unavailable: true, result: null, control_name: null });
    expect(verdict.message).toContain('could not check');
    expect(verdict.message).not.toContain('127.0.0.1');
    const open = await start({ failMode: 'open' }).catch(() => null);
    expect(open).toBeNull(); // init itself needs the server
  });

  it('allows with failMode open when the server is down', async () => {
    const guard = await start({ failMode: 'open' });
    await server.close();
    expect((await guard.verdict(ssn, 'pre')).decision).toBe('allow');
  });
});

describe('disclosure: what of the deciding control the model may read', () => {
  const cases: Array<[Disclosure, boolean, boolean]> = [
    ['minimal', false, false],
    ['name', true, false],
    ['full', true, true],
  ];
  for (const [disclosure, showsName, showsDetail] of cases) {
    it(`${disclosure}: name ${showsName ? 'shown' : 'hidden'}, evaluator message ${showsDetail ? 'shown' : 'hidden'}`, async () => {
      const guard = await start({ disclosure });
      const verdict = await guard.verdict(drop, 'pre');
      const error = (await guard.check(drop, 'pre').catch((e: unknown) => e)) as ControlViolationError;
      expect(error).toBeInstanceOf(ControlViolationError);
      for (const text of [verdict.message!, error.message]) {
        expect(text).toMatch(/^Blocked/);
        expect(text.includes('block-drop')).toBe(showsName);
        expect(text.includes('pattern matched')).toBe(showsDetail);
      }
      // The application always sees everything.
      expect(error.controlName).toBe('block-drop');
      expect(error.detail).toMatch(/pattern matched/);
      expect(verdict.control_name).toBe('block-drop');
    });
  }

  it('refuses an unknown disclosure', async () => {
    await expect(start({ disclosure: 'everything' as Disclosure })).rejects.toThrow(/disclosure must be one of minimal, name, full/);
  });
});
