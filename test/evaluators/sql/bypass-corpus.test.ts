/**
 * Runs every case of bypass-corpus.json through the sql evaluator with its named config:
 * SQL hidden in bodies (DO, functions, procedures, EXECUTE), names that shadow tables, MERGE
 * kinds and WHERE clauses that are always true. Each case is what an attacker tries; the
 * expected decision is what PostgreSQL would do with it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../../src/evaluators/registry.js';
import { loadSqlParser } from '../../../src/evaluators/sql/parser.js';
import type { CompiledCheck } from '../../../src/evaluators/types.js';

interface Case {
  name: string;
  config: string;
  sql: string;
  expect: 'match' | 'allow';
  message?: string;
}
interface Corpus {
  configs: Record<string, Record<string, unknown>>;
  cases: Case[];
}

const corpus = JSON.parse(readFileSync(new URL('./bypass-corpus.json', import.meta.url), 'utf8')) as Corpus;
const registry = createDefaultRegistry();
await loadSqlParser();

const checks = new Map<string, CompiledCheck>();
function checkFor(name: string): CompiledCheck {
  let check = checks.get(name);
  if (check === undefined) {
    const config = corpus.configs[name];
    if (config === undefined) throw new Error(`no config ${name}`);
    const compiled = registry.compile('sql', config);
    if (!compiled.ok) throw new Error(JSON.stringify(compiled.issues));
    check = compiled.compiled.check;
    checks.set(name, check);
  }
  return check;
}

describe('sql evaluator: bypass corpus', () => {
  it('holds over 100 cases, each name once', () => {
    expect(corpus.cases.length).toBeGreaterThanOrEqual(100);
    expect(new Set(corpus.cases.map((c) => c.name)).size).toBe(corpus.cases.length);
  });

  it.each(corpus.cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const out = await checkFor(c.config)(c.sql);
    expect(out.matched, `${c.sql}\n=> ${out.message ?? 'no match'}`).toBe(c.expect === 'match');
    if (c.message !== undefined) expect(out.message).toContain(c.message);
  });
});
