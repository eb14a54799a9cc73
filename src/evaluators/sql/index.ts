/**
 * The `sql` evaluator: parses the selected text with PostgreSQL's own parser (parser.ts) and
 * checks each statement against the config's rules: operations blocked or allowed, tables
 * blocked or allowed (wherever the statement names them, its DO and function bodies
 * included), DELETE/UPDATE without WHERE, statement count, SELECT limits. Never a regular
 * expression: `DROP/**\/TABLE` is a DROP, and 'DROP TABLE' inside a string literal is not.
 * Text that does not parse matches unless on_parse_error is allow: a guard fails closed on
 * what it cannot read, and so does a body it cannot read (another language, an EXECUTE of
 * a computed string).
 */
import { z } from 'zod';
import { textOf } from '../text.js';
import { ConfigError, type CompiledCheck, type EvaluatorDefinition, type EvaluatorOutcome, type ScanHint } from '../types.js';
import { OPERATIONS, type StatementFacts, type TableRef } from './facts.js';
import { loadSqlParser, missingParser, OFFLOAD_MIN_CHARS, ParseCache, parseSql, parseSqlAway, sqlParserNow, type Parsed } from './parser.js';

const OperationSchema = z.enum(OPERATIONS);
const operations = (what: string) =>
  z.array(OperationSchema).min(1, `${what} must hold at least one operation`).describe(`Statement kinds: ${OPERATIONS.join(', ')}`);
const tables = (what: string) =>
  z
    .array(z.string().regex(/^[^.\s]+(\.[^.\s]+)?$/, 'a table is name or schema.name'))
    .min(1, `${what} must hold at least one table`)
    .describe('Tables, case-insensitive: name (any schema) or schema.name');

export const SqlConfigSchema = z
  .strictObject({
    dialect: z.enum(['postgresql']).default('postgresql').describe('The SQL grammar: PostgreSQL (libpg-query)'),
    blocked_operations: operations('blocked_operations').optional(),
    allowed_operations: operations('allowed_operations').optional(),
    blocked_tables: tables('blocked_tables').optional(),
    allowed_tables: tables('allowed_tables').optional(),
    require_where: z.array(z.enum(['delete', 'update'])).min(1).optional().describe('Match these statements when they have no WHERE'),
    max_statements: z.number().int().min(1).optional().describe('Match text holding more statements than this'),
    require_limit: z.boolean().default(false).describe('Match a SELECT without LIMIT (or with LIMIT ALL)'),
    max_limit: z.number().int().min(0).optional().describe('Match a SELECT whose LIMIT is larger, missing or not a constant'),
    on_parse_error: z.enum(['match', 'allow']).default('match').describe('Text that does not parse: match (default) or allow'),
  })
  .superRefine((config, ctx) => {
    for (const what of ['operations', 'tables'] as const) {
      if (config[`blocked_${what}`] !== undefined && config[`allowed_${what}`] !== undefined) {
        ctx.addIssue({ code: 'custom', path: [`allowed_${what}`], message: `give blocked_${what} or allowed_${what}, not both` });
      }
    }
  });
export type SqlConfig = z.infer<typeof SqlConfigSchema>;

/**
 * Texts longer than this are not parsed: an evaluator error, which the control's on_error
 * decides (a deny control fails closed). Texts of OFFLOAD_MIN_CHARS (parser.ts) or more are
 * parsed on a thread, off the event loop, but a parse still costs a thread about half a
 * microsecond a character: the bound keeps what one check can take of the process small.
 * A query agents send is a few hundred characters, a generated IN list a few KB.
 */
export const MAX_SQL_LENGTH = 64 * 1024;

const NO_MATCH: EvaluatorOutcome = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });

export const sqlEvaluator: EvaluatorDefinition = {
  name: 'sql',
  description:
    'Parses the selected SQL (PostgreSQL grammar) and matches statements that break the rules: blocked or not allowed ' +
    'operations and tables, DELETE/UPDATE without WHERE, too many statements, SELECT without or above a LIMIT. ' +
    'Text that does not parse matches unless on_parse_error is allow.',
  configSchema: {
    ...z.toJSONSchema(SqlConfigSchema, { io: 'input' }),
    // The refinement above, for editors.
    not: { anyOf: [{ required: ['blocked_operations', 'allowed_operations'] }, { required: ['blocked_tables', 'allowed_tables'] }] },
  },
  zodSchema: SqlConfigSchema,
  compile(config, parts) {
    const rules = SqlConfigSchema.parse(config);
    // Not installed, or loaded and found unusable: refused. Otherwise the parser starts
    // loading now (parser.ts), and a check made before it is ready waits for it.
    const failed = missingParser ?? sqlParserNow();
    if (typeof failed === 'string') throw new ConfigError('', failed);
    void loadSqlParser();
    // Every sql control of a server shares one parse cache: the facts do not depend on the rules.
    const cache = parts ? parts.share('parse-cache', () => new ParseCache()) : new ParseCache();
    const hint = hintOf(rules);
    return Object.assign(checkOf(rules, cache, hint.scanPrefilter?.literals ?? null), hint);
  },
};

/** `keywords`: the scan hint's literals; a text holding none cannot match (checked here too, so the answer is the same with or without the engine's scan). */
function checkOf(rules: SqlConfig, cache: ParseCache, keywords: readonly string[] | null): CompiledCheck {
  const blockedOps = rules.blocked_operations ? new Set<string>(rules.blocked_operations) : null;
  const allowedOps = rules.allowed_operations ? new Set<string>(rules.allowed_operations) : null;
  const blockedTables = rules.blocked_tables?.map(tableOf) ?? null;
  const allowedTables = rules.allowed_tables?.map(tableOf) ?? null;
  const requireWhere = new Set(rules.require_where ?? []);
  const limitRule = rules.require_limit || rules.max_limit !== undefined;

  /**
   * The first rule the statement breaks, as `drop is blocked`; null when none. `unpinned`: an
   * earlier statement (or this one) may have changed search_path, so an unqualified name may
   * be a table of any schema and no longer matches a schema-qualified allowed table.
   */
  function brokenRule(s: StatementFacts, unpinned: boolean): string | null {
    for (const kind of s.kinds) {
      if (blockedOps?.has(kind)) return `${kind} is blocked`;
      if (allowedOps && !allowedOps.has(kind)) return `${kind} is not allowed (allowed: ${[...allowedOps].join(', ')})`;
    }
    for (const op of s.unfiltered) if (requireWhere.has(op)) return `${op} without WHERE`;
    for (const t of s.tables) {
      const blocked = blockedTables?.find((entry) => sameTable(entry, t));
      if (blocked) return `table ${nameOf(blocked)} is blocked`;
      if (allowedTables && !allowedTables.some((entry) => sameTable(entry, t) && !(unpinned && t.schema === null && entry.schema !== null))) {
        return `table ${nameOf(t)} is not allowed${unpinned && t.schema === null ? ' (search_path may have changed: qualify it)' : ''}`;
      }
    }
    if (limitRule && s.limit !== null) {
      if (s.limit === 'none') return 'select without LIMIT';
      if (s.limit === 'unknown') {
        if (rules.max_limit !== undefined) return 'LIMIT is not a constant';
      } else if (rules.max_limit !== undefined && s.limit > rules.max_limit) {
        return `LIMIT ${s.limit} is above ${rules.max_limit}`;
      }
    }
    return null;
  }

  const check: CompiledCheck = (value, memo) => {
    const text = memo ? memo.text(value) : textOf(value);
    if (text === undefined) return NO_MATCH;
    if (keywords !== null) {
      const lower = memo ? memo.lower(text) : text.toLowerCase();
      if (!keywords.some((k) => lower.includes(k))) return NO_MATCH;
    }
    if (text.length > MAX_SQL_LENGTH) throw new Error(`query is ${text.length} characters; the sql evaluator reads at most ${MAX_SQL_LENGTH}`);
    let parsed: Parsed | undefined = cache.get(text);
    if (parsed === undefined) {
      if (text.length >= OFFLOAD_MIN_CHARS) {
        return parseSqlAway(text).then((away) => {
          cache.set(text, away);
          return answerOf(away);
        });
      }
      const pg = sqlParserNow();
      // The first checks after the first sql control was compiled may find the parser still loading.
      if (pg === undefined) return loadSqlParser().then(() => check(value, memo));
      if (typeof pg === 'string') throw new Error(pg);
      parsed = parseSql(pg, text);
      cache.set(text, parsed);
    }
    return answerOf(parsed);
  };
  return check;

  function answerOf(parsed: Parsed): EvaluatorOutcome {
    if (!parsed.ok) return rules.on_parse_error === 'allow' ? NO_MATCH : matchOf(`does not parse as SQL: ${parsed.error}`, 'parse_error', null);
    const statements = parsed.statements;
    if (rules.max_statements !== undefined && statements.length > rules.max_statements) {
      return matchOf(`${statements.length} statements; at most ${rules.max_statements} allowed`, 'max_statements', null);
    }
    let unpinned = false;
    for (let i = 0; i < statements.length; i++) {
      const statement = statements[i]!;
      unpinned ||= statement.setsSearchPath;
      const broken = brokenRule(statement, unpinned);
      if (broken !== null) return matchOf(`statement ${i + 1}: ${broken}`, 'rule', i + 1);
      // Code the statement carries that could not be read fails closed, as text that does not parse.
      if (statement.unreadable !== null && rules.on_parse_error === 'match') {
        return matchOf(`statement ${i + 1}: ${statement.unreadable}`, 'parse_error', i + 1);
      }
    }
    return NO_MATCH;
  }
}

function matchOf(message: string, reason: string, statement: number | null): EvaluatorOutcome {
  return { matched: true, confidence: 1, message, metadata: statement === null ? { reason } : { reason, statement } };
}

function tableOf(entry: string): TableRef {
  const parts = entry.toLowerCase().replaceAll('"', '').split('.');
  return parts.length > 1 ? { schema: parts[0]!, name: parts[1]! } : { schema: null, name: parts[0]! };
}

/** Same table name, and the same schema when both name one. */
function sameTable(a: TableRef, b: TableRef): boolean {
  return a.name === b.name && (a.schema === null || b.schema === null || a.schema === b.schema);
}

const nameOf = (t: TableRef) => (t.schema === null ? t.name : `${t.schema}.${t.name}`);

/**
 * Operations whose statements always spell a keyword, and the keyword: a DROP is written
 * with DROP, and no quoting or escaping turns other text into a keyword. (A SELECT may be
 * `TABLE x` or `VALUES (1)`, and SELECT INTO creates, so those two give no hint.)
 */
const SPELLED = new Map<string, readonly string[]>([
  ...['insert', 'update', 'delete', 'drop', 'truncate', 'alter', 'grant', 'revoke', 'merge', 'do', 'copy'].map((op) => [op, [op]] as const),
  ['copy_program', ['program']],
  ['create_function', ['function', 'procedure']],
]);

/**
 * Bodies (DO, CREATE FUNCTION / PROCEDURE) are strings whose escapes and concatenations
 * can spell any keyword without writing it (`E'\x44ROP'`, `'DR' || 'OP'`): a text that may
 * hold one is always parsed.
 */
const BODY_KEYWORDS = ['do', 'function', 'procedure'];

/**
 * A scan hint (types.ts) for the one config it is sound for: only blocked_operations, all of
 * them spelled, and on_parse_error allow (otherwise text without the keywords can still
 * match by not parsing). Then a text holding none of the keywords (nor a body's) cannot match.
 */
function hintOf(rules: SqlConfig): ScanHint {
  const onlyBlockedOps =
    rules.blocked_operations !== undefined &&
    rules.on_parse_error === 'allow' &&
    rules.allowed_operations === undefined &&
    rules.blocked_tables === undefined &&
    rules.allowed_tables === undefined &&
    rules.require_where === undefined &&
    rules.max_statements === undefined &&
    !rules.require_limit &&
    rules.max_limit === undefined;
  if (!onlyBlockedOps || !rules.blocked_operations!.every((op) => SPELLED.has(op))) return {};
  const literals = new Set([...rules.blocked_operations!.flatMap((op) => SPELLED.get(op)!), ...BODY_KEYWORDS]);
  return { scanPrefilter: Object.freeze({ literals: [...literals], folded: true }) };
}
