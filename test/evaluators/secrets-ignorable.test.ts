/**
 * Secrets split by invisible characters (docs/security.md): zero-width spaces, soft hyphens
 * and other default-ignorable code points inside a token do not hide it from the secrets
 * evaluator, and what it found is masked in the answer, the excerpt and recordings.
 */
import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { ControlDataSchema } from '../../src/model/index.js';
import { maskSecretsIn } from '../../src/recording/index.js';

const registry = createDefaultRegistry();
const ZW = '\u200b';
const SHY = '\u00ad';
const TAG = '\u{E0041}';
const STRIPE_TAIL = `live_${'4eC39HqLyjWDarjtT1zdp7dc'}`;

const secrets = (config: object = {}) => ({
  control_id: 1,
  name: 'secrets',
  data: ControlDataSchema.parse({ selector: { path: 'input.text' }, evaluator: { name: 'secrets', config }, action: { decision: 'deny' } }),
});

async function run(text: string, config: object = {}) {
  const set = compileControls([secrets(config)], registry);
  return evaluateStep(set, { type: 'tool', name: 't', input: { text } }, 'pre', { collectExecutions: true, excerpts: true });
}

const CASES: Array<[string, string]> = [
  ['zero-width space in an AWS key', `key AKIA${ZW}QWERTYUIOPASDF7Z here`],
  ['soft hyphen in a Stripe prefix', `sk_${SHY}${STRIPE_TAIL}`],
  ['soft hyphen splitting the first prefix letters', `s${SHY}k_${STRIPE_TAIL}`],
  ['several invisible characters', `A${ZW}K\u2060I\ufeffA${SHY}QWERTYUIOPASDF7Z`],
  ['a tag character (outside the BMP)', `AKIA${TAG}QWERTYUIOPASDF7Z`],
];

describe('secrets split by default-ignorable characters', () => {
  for (const [name, text] of CASES) {
    it(`${name} is found and masked`, async () => {
      const out = await run(text);
      expect(out.result.matches.length, name).toBe(1);
      const shown = JSON.stringify(out);
      expect(shown).not.toContain(text.replace(/^key | here$/g, ''));
      expect(shown).not.toContain('QWERTYUIOPASDF7Z');
      expect(shown).not.toContain('4eC39HqLyjWDarjtT1zdp7dc');
    });
  }

  it('a password split by a zero-width space is found with min_entropy', async () => {
    const out = await run(`pass${ZW}word=Xk9#pL2mQ7vRz`, { min_entropy: 1 });
    expect(out.result.matches.length).toBe(1);
    expect(JSON.stringify(out)).not.toContain('Xk9#pL2mQ7vRz');
  });

  it('recordings mask the split key in place', () => {
    const masked = maskSecretsIn(`deploy AKIA${ZW}QWERTYUIOPASDF7Z now`);
    expect(masked).not.toContain('QWERTYUIOPASDF7Z');
    expect(masked.startsWith('deploy ')).toBe(true);
    expect(masked.endsWith(' now')).toBe(true);
  });

  it('plain text with invisible characters and no secret does not match', async () => {
    const out = await run(`hello${ZW}world ${SHY}nothing here`);
    expect(out.result.matches.length).toBe(0);
  });
});
