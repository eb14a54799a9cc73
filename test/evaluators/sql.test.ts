import { existsSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { MAX_SQL_LENGTH } from '../../src/evaluators/sql/index.js';
import { ParsePool } from '../../src/evaluators/sql/parse-pool.js';
import { loadSqlParser, MAX_LONG_IN_FLIGHT, OFFLOAD_MIN_CHARS, parseSql, parseSqlAway, type PgModule } from '../../src/evaluators/sql/parser.js';
import { readTree } from '../../src/evaluators/sql/tree-reader.js';
import type { CompiledCheck, EvaluatorOutcome } from '../../src/evaluators/types.js';

const registry = createDefaultRegistry();
// Loaded before the tables run, so that their checks answer at once (see the loading tests below).
const pg = (await loadSqlParser()) as PgModule;

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

describe('sql evaluator: require_where and a WHERE that is always true', () => {
  const WHERE = checkOf({ require_where: ['delete', 'update'] });
  const cases: Array<[string, boolean]> = [
    // Counted as no WHERE: the recognised always-true forms.
    ['DELETE FROM orders WHERE true', true],
    ['DELETE FROM orders WHERE TRUE', true],
    ['DELETE FROM orders WHERE 1=1', true],
    ['DELETE FROM orders WHERE 1 = 1', true],
    ["DELETE FROM orders WHERE 'a'='a'", true],
    ['DELETE FROM orders WHERE 1.5 = 1.5', true],
    ['DELETE FROM orders WHERE 0 = 0', true],
    ['DELETE FROM orders WHERE false = false', true],
    ['DELETE FROM orders WHERE id = id', true],
    ['DELETE FROM orders WHERE o.id = o.id', true],
    ['DELETE FROM orders WHERE true OR id = 5', true],
    ['DELETE FROM orders WHERE id = 5 OR 1 = 1', true],
    ['DELETE FROM orders WHERE (id = 5 OR (2 = 2))', true],
    ['DELETE FROM orders WHERE NOT false', true],
    ['DELETE FROM orders WHERE NOT (false AND id = 1)', true],
    ['DELETE FROM orders WHERE NOT NOT true', true],
    ['DELETE FROM orders WHERE true AND 1 = 1', true],
    ["UPDATE orders SET status = 'x' WHERE true", true],
    ['UPDATE orders SET status = 1 WHERE 1 = 1 OR false', true],
    ['WITH d AS (DELETE FROM orders WHERE true RETURNING *) SELECT * FROM d', true],
    // PostgreSQL's numeric literals are exact: 1 = 1.0 is true.
    ['DELETE FROM orders WHERE 1 = 1.0', true],
    // Near misses: still filtered.
    ['DELETE FROM orders WHERE id = 1', false],
    ['DELETE FROM orders WHERE true AND id = 1', false],
    ['DELETE FROM orders WHERE false', false],
    ['DELETE FROM orders WHERE NOT true', false],
    ['DELETE FROM orders WHERE 1 = 2', false],
    ["DELETE FROM orders WHERE 'a' = 'b'", false],
    ['DELETE FROM orders WHERE NULL = NULL', false],
    ['DELETE FROM orders WHERE id = other_id', false],
    ['DELETE FROM orders WHERE a.id = b.id', false],
    ['DELETE FROM orders WHERE 1 <> 1', false],
    ['DELETE FROM orders WHERE 1 < 1', false],
    ['DELETE FROM orders WHERE false OR id = 3', false],
    ['DELETE FROM orders WHERE NOT (id = 1)', false],
    ["UPDATE orders SET a = 1 WHERE status = 'open' AND 1 = 1", false],
    ['SELECT * FROM orders WHERE true', false],
  ];
  it.each(cases)('%s: counted as without WHERE: %s', (query, unfiltered) => {
    const out = WHERE(query) as EvaluatorOutcome;
    expect(out.matched, out.message ?? '').toBe(unfiltered);
    if (unfiltered) expect(out.message).toMatch(/^statement 1: (delete|update) without WHERE$/);
  });

  it('nesting too deep to look through counts as without WHERE (fails closed)', () => {
    expect((WHERE(`DELETE FROM orders WHERE ${'NOT '.repeat(400)}id = 1`) as EvaluatorOutcome).matched).toBe(true);
    expect((WHERE(`DELETE FROM orders WHERE ${'NOT '.repeat(50)}id = 1`) as EvaluatorOutcome).matched).toBe(false);
  });
});

describe('sql evaluator: long texts are parsed on a thread, with the same answers', () => {
  /** Pads `query` past OFFLOAD_MIN_CHARS with a wide first SELECT. */
  const padded = (tail: string) => `SELECT ${Array.from({ length: 600 }, (_, i) => `c${i}`).join(', ')} FROM t; ${tail}`;
  const configs: Array<Record<string, unknown>> = [
    { blocked_operations: ['drop', 'truncate'], require_where: ['delete', 'update'] },
    { blocked_tables: ['billing.payments'], max_statements: 5 },
    { allowed_operations: ['select'], require_limit: true },
    { max_limit: 100, on_parse_error: 'allow' },
  ];
  const tails = [
    'DROP TABLE x',
    'SELECT 1 LIMIT 500',
    'DELETE FROM orders WHERE true',
    'UPDATE orders SET a = 1 WHERE id = 2; SELECT * FROM payments',
    "WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d, billing.payments LIMIT 5",
    "SELECT 'ä😀 DROP TABLE \"x\"' FROM \"Ünï\".\"Tàb\" LIMIT 1",
    'DROPP TABLE x',
    'SELECT 1',
    "SELECT 'ä😀'; DO $$ BEGIN EXECUTE 'DR' || 'OP TABLE x'; END $$",
    'CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $b$ DELETE FROM orders WHERE 2 > 1 $b$',
    "DO $$ BEGIN EXECUTE format('DROP TABLE %I', 'x'); END $$",
    `DO $$ BEGIN ${'PERFORM 1; '.repeat(250)}TRUNCATE payments; END $$`,
  ];

  it.each(tails)('%s', async (tail) => {
    const text = padded(tail);
    expect(text.length).toBeGreaterThanOrEqual(OFFLOAD_MIN_CHARS);
    for (const config of configs) {
      const check = checkOf(config);
      const away = check(text);
      expect(away).toBeInstanceOf(Promise);
      // The answer is a function of the parse: the same parse, the same answer.
      expect(await parseSqlAway(text)).toEqual(parseSql(pg, text));
      await away;
    }
  });

  it('a large multi-statement text answers as the inline path does', async () => {
    const text = padded('SELECT * FROM orders; DROP TABLE x');
    const out = await SAFETY(text);
    expect(out).toEqual({ matched: true, confidence: 1, message: 'statement 3: drop is blocked', metadata: { reason: 'rule', statement: 3 } });
    expect(parseSql(pg, text)).toEqual(await parseSqlAway(text));
  });

  it('the event loop runs while a long text is parsed and read', async () => {
    const text = `SELECT ${Array.from({ length: 8_500 }, (_, i) => `c${i}`).join(', ')} FROM t; DROP TABLE t`;
    let turns = 0;
    let running = true;
    const tick = () => {
      if (!running) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const out = await SAFETY(text);
    running = false;
    expect(out.message).toBe('statement 2: drop is blocked');
    // Parsed on the loop, the check would have answered before any turn ran.
    expect(turns).toBeGreaterThan(1);
  });

  it('a full queue fails at once (an evaluator error), and the pool goes on', async () => {
    const pool = new ParsePool({ size: 1, maxQueued: 1 });
    try {
      const text = padded('DROP TABLE x');
      const first = pool.parse(text);
      const second = pool.parse(text);
      await expect(pool.parse(text)).rejects.toThrow(/already waiting for a parse thread/);
      expect('tree' in (await first)).toBe(true);
      expect('tree' in (await second)).toBe(true);
      expect('tree' in (await pool.parse(text))).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it('a burst of long texts: at most MAX_LONG_IN_FLIGHT under way (parsing or being read), the rest fail at once', async () => {
    const texts = Array.from({ length: MAX_LONG_IN_FLIGHT + 40 }, (_, i) => padded(`DELETE FROM orders WHERE id = ${i}`));
    const settled = await Promise.allSettled(texts.map((t) => parseSqlAway(t)));
    const failed = settled.filter((s) => s.status === 'rejected');
    expect(failed).toHaveLength(40);
    expect(String((failed[0] as PromiseRejectedResult).reason)).toMatch(/long SQL texts are already being parsed/);
    // Once they are done, long texts are parsed again.
    expect((await parseSqlAway(texts[0]!)).ok).toBe(true);
  });

  it('the same long text checked twice at once is parsed once', async () => {
    const text = padded('DROP TABLE shared_once');
    expect(parseSqlAway(text)).toBe(parseSqlAway(text));
    await parseSqlAway(text);
  });

  // The compiled reader exists once the package is built (npm test builds first).
  const compiledReader = new URL('../../dist/src/evaluators/sql/tree-reader.js', import.meta.url);
  it.runIf(existsSync(compiledReader))('a thread that reads the facts itself gives the facts the loop reads', async () => {
    const pool = new ParsePool({ readerModule: compiledReader.href });
    const plain = new ParsePool({ readerModule: null });
    try {
      for (const tail of ["WITH payments AS (SELECT 1) DELETE FROM payments WHERE 1 = 1", "DO $$ BEGIN DROP TABLE x; END $$", 'DROPP TABLE x']) {
        const text = padded(tail);
        const read = await pool.parseAndRead(text);
        const json = await plain.parseAndRead(text);
        if ('tree' in json) {
          expect(read).toEqual({ statements: readTree(json.tree) });
          expect('statements' in read && read.statements.length).toBe(2);
        } else expect(read).toEqual(json);
      }
    } finally {
      await Promise.all([pool.close(), plain.close()]);
    }
  });

  it('a parse that runs too long fails and its thread is replaced', async () => {
    const pool = new ParsePool({ size: 1, timeoutMs: 1 });
    try {
      await expect(pool.parse(padded('SELECT 1'))).rejects.toThrow(/SQL parse stopped after 1 ms/);
    } finally {
      await pool.close();
    }
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
  it('10,000 nested parentheses: a parse failure, not a crash; the parser still works after', async () => {
    const out = await SAFETY(`SELECT ${'('.repeat(10_000)}1${')'.repeat(10_000)}`);
    expect(out.matched).toBe(true);
    expect(out.message).toMatch(/^does not parse as SQL: memory exhausted/);
    expect((SAFETY('DROP TABLE x') as EvaluatorOutcome).message).toContain('drop is blocked');
  });

  it('a 1 MB or 100 KB query is an evaluator error (on_error decides), refused without parsing', () => {
    expect(() => SAFETY(`SELECT '${'x'.repeat(1024 * 1024)}'`)).toThrow(`at most ${MAX_SQL_LENGTH}`);
    expect(() => SAFETY(`SELECT '${'x'.repeat(100 * 1024)}'`)).toThrow(`at most ${MAX_SQL_LENGTH}`);
  });

  it('a query just under the limit parses', async () => {
    const query = `SELECT ${Array.from({ length: 9_000 }, (_, i) => `c${i}`).join(', ')} FROM t; DROP TABLE t`;
    expect(query.length).toBeGreaterThan(60_000);
    expect(query.length).toBeLessThanOrEqual(MAX_SQL_LENGTH);
    expect((await SAFETY(query)).message).toBe('statement 2: drop is blocked');
  });

  it('a NUL character is a parse failure: the parser would stop reading there', () => {
    const out = SAFETY('SELECT 1\0; DROP TABLE x') as EvaluatorOutcome;
    expect(out).toMatchObject({ matched: true, message: 'does not parse as SQL: a NUL character in the text' });
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
    // A body can spell a keyword without writing it: the body keywords are literals too.
    expect((hinted.compiled.check as { scanPrefilter?: unknown }).scanPrefilter).toEqual({ literals: ['drop', 'truncate', 'do', 'function', 'procedure'], folded: true });
    expect((failClosed.compiled.check as { scanPrefilter?: unknown }).scanPrefilter).toBeUndefined();
    expect((select.compiled.check as { scanPrefilter?: unknown }).scanPrefilter).toBeUndefined();
    expect((hinted.compiled.check('SELECT 1; DrOp TABLE x') as EvaluatorOutcome).matched).toBe(true);
    expect((hinted.compiled.check("DO $$ BEGIN EXECUTE 'DR' || 'OP TABLE x'; END $$") as EvaluatorOutcome).matched).toBe(true);
    expect((hinted.compiled.check("CREATE FUNCTION f() RETURNS void LANGUAGE sql AS E'\\x44ROP TABLE x'") as EvaluatorOutcome).matched).toBe(true);
    const program = registry.compile('sql', { blocked_operations: ['copy_program'], on_parse_error: 'allow' });
    if (!program.ok) throw new Error('compile');
    expect((program.compiled.check as { scanPrefilter?: unknown }).scanPrefilter).toEqual({ literals: ['program', 'do', 'function', 'procedure'], folded: true });
    expect((program.compiled.check("COPY t TO PROGRAM 'id'") as EvaluatorOutcome).matched).toBe(true);
  });
});

describe('sql evaluator: the parser loads on first need', () => {
  it('is not loaded by importing the evaluators; a check made while it loads waits for it, then checks answer at once', async () => {
    vi.resetModules();
    const fresh = await import('../../src/evaluators/sql/parser.js');
    const { createDefaultRegistry: freshRegistry } = await import('../../src/evaluators/registry.js');
    expect(fresh.sqlParserNow()).toBeUndefined();
    const compiled = freshRegistry().compile('sql', { blocked_operations: ['drop'] });
    if (!compiled.ok) throw new Error(JSON.stringify(compiled.issues));
    const first = compiled.compiled.check('SELECT 1; DROP TABLE x');
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toMatchObject({ matched: true, message: 'statement 2: drop is blocked' });
    expect(typeof fresh.sqlParserNow()).toBe('object');
    expect(compiled.compiled.check('DROP TABLE y')).toMatchObject({ matched: true, message: 'statement 1: drop is blocked' });
  });
});
