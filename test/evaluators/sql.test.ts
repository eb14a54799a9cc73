import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { MAX_SQL_LENGTH } from '../../src/evaluators/sql/index.js';
import type { CompiledCheck, EvaluatorOutcome } from '../../src/evaluators/types.js';

const registry = createDefaultRegistry();

function checkOf(config: Record<string, unknown>): CompiledCheck {
  const compiled = registry.compile('sql', config);
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.issues));
  return compiled.compiled.check;
}

const SAFETY = checkOf({ blocked_operations: ['drop', 'truncate', 'alter', 'grant', 'revoke'], require_where: ['delete', 'update'] });

type Case = [name: string, query: string, matched: boolean, message?: string];

const TRUE_POSITIVES: Case[] = [
  ['drop table', 'DROP TABLE orders', true, 'statement 1: drop is blocked'],
  ['truncate', 'TRUNCATE orders', true, 'statement 1: truncate is blocked'],
  ['alter table', 'ALTER TABLE orders ADD COLUMN x int', true, 'statement 1: alter is blocked'],
  ['grant', 'GRANT ALL ON orders TO public', true, 'statement 1: grant is blocked'],
  ['revoke', 'REVOKE SELECT ON orders FROM bob', true, 'statement 1: revoke is blocked'],
  ['delete without where', 'DELETE FROM orders', true, 'statement 1: delete without WHERE'],
  ['update without where', "UPDATE orders SET status = 'x'", true, 'statement 1: update without WHERE'],
  ['a delete inside a CTE', 'WITH d AS (DELETE FROM orders RETURNING *) SELECT count(*) FROM d', true, 'delete without WHERE'],
  ['explain analyze runs the update', 'EXPLAIN ANALYZE UPDATE orders SET a = 1', true, 'update without WHERE'],
  ['drop database', 'DROP DATABASE prod', true, 'drop is blocked'],
];

const NEAR_MISSES: Case[] = [
  ['a plain select', 'SELECT id, total FROM orders WHERE status = $1 LIMIT 10', false],
  ['DROP inside a string literal', "SELECT * FROM notes WHERE body = 'DROP TABLE orders'", false],
  ['a comment that mentions DELETE', '-- DELETE FROM orders\nSELECT 1', false],
  ['a block comment that mentions TRUNCATE', 'SELECT /* TRUNCATE orders */ 1', false],
  ['a column named drop', 'SELECT "drop" FROM t', false],
  ['delete with where', 'DELETE FROM orders WHERE id = 7', false],
  ['update with where', 'UPDATE orders SET a = 1 WHERE id = 7', false],
  ['an insert', "INSERT INTO audit (msg) VALUES ('truncate later')", false],
  ['a dollar-quoted string', "SELECT $$DROP TABLE x$$", false],
  ['empty text', '', false],
  ['blank text', '  \n ', false],
  ['only a comment', '-- DROP TABLE x', false],
];

const BYPASSES: Case[] = [
  ['a comment between keywords', 'DROP/**/TABLE orders', true, 'drop is blocked'],
  ['odd case and whitespace', 'dRoP\n\t  TaBlE\n orders', true, 'drop is blocked'],
  ['quoted identifiers', 'DROP TABLE "Orders"', true, 'drop is blocked'],
  ['schema-qualified', 'TRUNCATE TABLE public.orders CASCADE', true, 'truncate is blocked'],
  ['a second statement', 'SELECT 1; DROP TABLE x', true, 'statement 2: drop is blocked'],
  ['a third statement after a comment', "SELECT 1; /* hi */ SELECT 'a;b'; TRUNCATE x", true, 'statement 3: truncate is blocked'],
  ['a leading comment', '/* ok */ DROP TABLE x', true, 'drop is blocked'],
  ['nested comments', '/* a /* b */ c */ DROP TABLE x', true, 'drop is blocked'],
  ['text that does not parse (fail closed)', 'DROPP TABLE orders', true, 'does not parse as SQL: syntax error at character 1'],
  ['a half-hidden statement', "SELECT 1; DROP TABLE x --'", true, 'statement 2: drop is blocked'],
];

describe('sql evaluator: operations and WHERE (parsed, never pattern-matched)', () => {
  it.each([...TRUE_POSITIVES, ...NEAR_MISSES, ...BYPASSES])('%s', (_name, query, matched, message) => {
    const out = SAFETY(query) as EvaluatorOutcome;
    expect(out.matched, out.message ?? '').toBe(matched);
    if (message !== undefined) expect(out.message).toContain(message);
  });

  it('a parse error message gives the position, never the text', () => {
    const out = SAFETY('SELEC secret_value FROM t') as EvaluatorOutcome;
    expect(out.message).toBe('does not parse as SQL: syntax error at character 1');
  });

  it('on_parse_error: allow lets text that does not parse through', () => {
    expect((checkOf({ blocked_operations: ['drop'], on_parse_error: 'allow' })('DROPP TABLE x') as EvaluatorOutcome).matched).toBe(false);
  });
});

describe('sql evaluator: allowed operations, tables, statements, limits', () => {
  const cases: Array<[string, Record<string, unknown>, string, boolean, string?]> = [
    ['allowed select only: select passes', { allowed_operations: ['select'] }, 'SELECT * FROM t', false],
    ['allowed select only: insert fails', { allowed_operations: ['select'] }, 'INSERT INTO t VALUES (1)', true, 'statement 1: insert is not allowed (allowed: select)'],
    ['allowed select only: COPY is another kind', { allowed_operations: ['select'] }, "COPY t TO '/tmp/x'", true, 'copy is not allowed'],
    ['allowed select only: SELECT INTO creates', { allowed_operations: ['select'] }, 'SELECT * INTO t2 FROM t', true, 'create is not allowed'],
    ['blocked table in a join', { blocked_tables: ['payments'] }, 'SELECT * FROM orders o JOIN Payments p ON p.id = o.pid', true, 'table payments is blocked'],
    ['blocked table in a subquery', { blocked_tables: ['payments'] }, 'SELECT * FROM orders WHERE id IN (SELECT oid FROM billing.payments)', true, 'table payments is blocked'],
    ['blocked table in a CTE', { blocked_tables: ['payments'] }, 'WITH p AS (SELECT * FROM payments) SELECT * FROM p', true, 'table payments is blocked'],
    ['blocked table, quoted and upper case', { blocked_tables: ['payments'] }, 'SELECT * FROM "PAYMENTS"', true, 'table payments is blocked'],
    ['blocked qualified table, other schema', { blocked_tables: ['billing.payments'] }, 'SELECT * FROM archive.payments', false],
    ['blocked qualified table, unqualified use', { blocked_tables: ['billing.payments'] }, 'SELECT * FROM payments', true, 'table billing.payments is blocked'],
    ['blocked table dropped', { blocked_tables: ['payments'] }, 'DROP TABLE IF EXISTS public.payments', true, 'table payments is blocked'],
    ['blocked table in a string is not a table', { blocked_tables: ['payments'] }, "SELECT 'payments' FROM t", false],
    ['allowed tables: a CTE name is not a table', { allowed_tables: ['orders'] }, 'WITH x AS (SELECT * FROM orders) SELECT * FROM x', false],
    ['allowed tables: another table', { allowed_tables: ['orders', 'public.customers'] }, 'SELECT * FROM orders JOIN secrets USING (id)', true, 'table secrets is not allowed'],
    ['max_statements', { max_statements: 1 }, 'SELECT 1; SELECT 2', true, '2 statements; at most 1 allowed'],
    ['max_statements ok', { max_statements: 1 }, 'SELECT 1;', false],
    ['require_limit without limit', { require_limit: true }, 'SELECT * FROM t', true, 'statement 1: select without LIMIT'],
    ['require_limit with LIMIT ALL', { require_limit: true }, 'SELECT * FROM t LIMIT ALL', true, 'select without LIMIT'],
    ['require_limit with limit', { require_limit: true }, 'SELECT * FROM t LIMIT 10', false],
    ['require_limit ignores inserts', { require_limit: true }, 'INSERT INTO t SELECT * FROM u', false],
    ['max_limit above', { max_limit: 1000 }, 'SELECT * FROM t LIMIT 5000', true, 'statement 1: LIMIT 5000 is above 1000'],
    ['max_limit with FETCH FIRST', { max_limit: 1000 }, 'SELECT * FROM t FETCH FIRST 2000 ROWS ONLY', true, 'LIMIT 2000 is above 1000'],
    ['max_limit with a parameter', { max_limit: 1000 }, 'SELECT * FROM t LIMIT $1', true, 'LIMIT is not a constant'],
    ['max_limit below', { max_limit: 1000 }, 'SELECT * FROM t LIMIT 0', false],
    ['max_limit on a union', { max_limit: 10 }, 'SELECT 1 UNION SELECT 2 LIMIT 50', true, 'LIMIT 50 is above 10'],
  ];
  it.each(cases)('%s', (_name, config, query, matched, message) => {
    const out = checkOf(config)(query) as EvaluatorOutcome;
    expect(out.matched, out.message ?? '').toBe(matched);
    if (message !== undefined) expect(out.message).toContain(message);
  });
});

describe('sql evaluator: hostile input', () => {
  it('10,000 nested parentheses: a parse failure, not a crash; the parser still works after', () => {
    const out = SAFETY(`SELECT ${'('.repeat(10_000)}1${')'.repeat(10_000)}`) as EvaluatorOutcome;
    expect(out.matched).toBe(true);
    expect(out.message).toMatch(/^does not parse as SQL: memory exhausted/);
    expect((SAFETY('DROP TABLE x') as EvaluatorOutcome).message).toContain('drop is blocked');
  });

  it('a 1 MB or 100 KB query is an evaluator error (on_error decides), refused without parsing', () => {
    expect(() => SAFETY(`SELECT '${'x'.repeat(1024 * 1024)}'`)).toThrow(`at most ${MAX_SQL_LENGTH}`);
    expect(() => SAFETY(`SELECT '${'x'.repeat(100 * 1024)}'`)).toThrow(`at most ${MAX_SQL_LENGTH}`);
  });

  it('a query just under the limit parses', () => {
    const query = `SELECT ${Array.from({ length: 9_000 }, (_, i) => `c${i}`).join(', ')} FROM t; DROP TABLE t`;
    expect(query.length).toBeGreaterThan(60_000);
    expect(query.length).toBeLessThanOrEqual(MAX_SQL_LENGTH);
    expect((SAFETY(query) as EvaluatorOutcome).message).toBe('statement 2: drop is blocked');
  });

  it('a value that is not a string is read as its JSON text (which does not parse: match)', () => {
    expect((SAFETY({ query: 'SELECT 1' }) as EvaluatorOutcome).matched).toBe(true);
  });
});

describe('sql evaluator: configs that cannot work are refused with the field path', () => {
  const bad: Array<[string, Record<string, unknown>, string, RegExp]> = [
    ['an unknown operation', { blocked_operations: ['drop', 'destroy'] }, 'evaluator.config.blocked_operations[1]', /./],
    ['both operation lists', { blocked_operations: ['drop'], allowed_operations: ['select'] }, 'evaluator.config.allowed_operations', /not both/],
    ['both table lists', { blocked_tables: ['a'], allowed_tables: ['b'] }, 'evaluator.config.allowed_tables', /not both/],
    ['an empty list', { blocked_operations: [] }, 'evaluator.config.blocked_operations', /at least one/],
    ['a table with three parts', { blocked_tables: ['db.public.orders'] }, 'evaluator.config.blocked_tables[0]', /schema\.name/],
    ['require_where on select', { require_where: ['select'] }, 'evaluator.config.require_where[0]', /./],
    ['an unknown dialect', { dialect: 'mysql' }, 'evaluator.config.dialect', /./],
    ['a typo', { blocked_operation: ['drop'] }, 'evaluator.config.blocked_operation', /unknown field/],
    ['max_statements 0', { max_statements: 0 }, 'evaluator.config.max_statements', /./],
  ];
  it.each(bad)('%s', (_name, config, field, message) => {
    const issues = registry.validateConfig('sql', config);
    expect(issues.map((i) => i.field)).toContain(field);
    expect(issues.find((i) => i.field === field)?.message).toMatch(message);
  });
});

describe('sql evaluator: scan hint', () => {
  it('declares keywords only where a text without them cannot match', () => {
    const hinted = registry.compile('sql', { blocked_operations: ['drop', 'truncate'], on_parse_error: 'allow' });
    const failClosed = registry.compile('sql', { blocked_operations: ['drop', 'truncate'] });
    const select = registry.compile('sql', { blocked_operations: ['select'], on_parse_error: 'allow' });
    if (!hinted.ok || !failClosed.ok || !select.ok) throw new Error('compile');
    expect((hinted.compiled.check as { scanPrefilter?: unknown }).scanPrefilter).toEqual({ literals: ['drop', 'truncate'], folded: true });
    expect((failClosed.compiled.check as { scanPrefilter?: unknown }).scanPrefilter).toBeUndefined();
    expect((select.compiled.check as { scanPrefilter?: unknown }).scanPrefilter).toBeUndefined();
    expect((hinted.compiled.check('SELECT 1; DrOp TABLE x') as EvaluatorOutcome).matched).toBe(true);
  });
});
