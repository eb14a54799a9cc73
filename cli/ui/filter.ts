/**
 * The `/` filter of the dashboard: space-separated terms that must all hold.
 *   agent=NAME  control=NAME  decision=deny  step=NAME  stage=pre   exact value
 *   agent=~RE   control=~RE   ...                                   regular expression
 *   session:ID  (the same as session=ID)                            follow one session
 *   session:"run 1"   a value in double quotes is a JSON string: it may hold spaces
 *   RE                                                              regex on any field
 * A leading `!` inverts a term. Regexes are RE2 (linear time), so a pattern typed into
 * the filter can never stall the screen under a flood.
 */
import RE2 from 're2';
import type { EvaluationSummary } from '../../src/model/stream.js';

export const FILTER_FIELDS = ['agent', 'control', 'decision', 'step', 'stage', 'session'] as const;
export type FilterField = (typeof FILTER_FIELDS)[number] | 'any';

export interface FilterTerm {
  field: FilterField;
  negate: boolean;
  test: (value: string) => boolean;
}

export interface Filter {
  /** What the user typed, shown in the header and offered again when `/` is pressed. */
  text: string;
  terms: FilterTerm[];
}

export type FilterParse = { ok: true; filter: Filter | null } | { ok: false; error: string };

/** An empty text clears the filter (`filter: null`). */
export function parseFilter(text: string): FilterParse {
  const trimmed = text.trim();
  if (trimmed === '') return { ok: true, filter: null };
  const terms: FilterTerm[] = [];
  const words = wordsOf(trimmed);
  if (typeof words === 'string') return { ok: false, error: words };
  for (const raw of words) {
    const term = parseTerm(raw);
    if (typeof term === 'string') return { ok: false, error: term };
    terms.push(term);
  }
  return { ok: true, filter: { text: trimmed, terms } };
}

/**
 * The terms, split at spaces outside double quotes: a session id may hold spaces, and
 * cut at one its first part would follow another session.
 */
function wordsOf(text: string): string[] | string {
  const words: string[] = [];
  let word = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted && c === '\\' && i + 1 < text.length) {
      word += c + text[++i]!;
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (!quoted && /\s/.test(c)) {
      if (word !== '') words.push(word);
      word = '';
      continue;
    }
    word += c;
  }
  if (quoted) return `${word}: no closing quote`;
  if (word !== '') words.push(word);
  return words;
}

/** A value as typed: a JSON string when quoted (`"run 1"`, `"say \\"hi\\""`), else the text itself. */
function valueOf(text: string): string | null {
  if (!text.startsWith('"')) return text;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'string' ? value : null;
  } catch {
    return null;
  }
}

function parseTerm(raw: string): FilterTerm | string {
  const negate = raw.startsWith('!');
  const body = negate ? raw.slice(1) : raw;
  if (body === '') return `"${raw}": nothing after "!"`;
  // `session:ID` reads like the id a person copies from a detail view; exact, never a regex.
  const session = /^session:(.*)$/.exec(body);
  if (session) {
    const id = valueOf(session[1]!);
    if (id === null) return `${raw}: a quoted session id is a JSON string ("run 1")`;
    if (id === '') return 'session: a session id is needed (session:ID)';
    return { field: 'session', negate, test: (s) => s === id };
  }
  const field = /^([a-z]+)=(~?)(.*)$/.exec(body);
  if (field && (FILTER_FIELDS as readonly string[]).includes(field[1]!)) {
    const name = field[1] as FilterField;
    const value = field[3]!;
    if (field[2] === '~') {
      const re = compile(value);
      return typeof re === 'string' ? `${name}=~${value}: ${re}` : { field: name, negate, test: (s) => re.test(s) };
    }
    const exact = valueOf(value);
    if (exact === null) return `${raw}: a quoted value is a JSON string ("run 1")`;
    if (exact === '') return `${name}=: a value is needed (or ${name}=~REGEX)`;
    return { field: name, negate, test: (s) => s === exact };
  }
  const re = compile(body);
  return typeof re === 'string' ? `${body}: ${re}` : { field: 'any', negate, test: (s) => re.test(s) };
}

function compile(pattern: string): RE2 | string {
  try {
    return new RE2(pattern);
  } catch (error) {
    return `not a valid regular expression (${error instanceof Error ? error.message : String(error)})`;
  }
}

function valuesOf(summary: EvaluationSummary, field: FilterField): string[] {
  switch (field) {
    case 'agent':
      return [summary.agent_name];
    case 'control':
      return [...summary.matches, ...summary.shadow_matches].map((m) => m.control_name);
    case 'decision':
      return [summary.decision];
    case 'step':
      return [summary.step_name];
    case 'stage':
      return [summary.stage];
    case 'session':
      // A sessionless step has no value: `session:x` never shows it, `!session:x` does.
      return summary.session_id === null || summary.session_id === undefined ? [] : [summary.session_id];
    case 'any':
      return [
        summary.agent_name, summary.step_name, summary.decision, summary.stage,
        ...(summary.session_id === null || summary.session_id === undefined ? [] : [summary.session_id]),
        ...summary.matches.map((m) => m.control_name), ...summary.shadow_matches.map((m) => m.control_name),
      ];
  }
}

export function matchesFilter(filter: Filter | null, summary: EvaluationSummary): boolean {
  if (!filter) return true;
  for (const term of filter.terms) {
    const hit = valuesOf(summary, term.field).some(term.test);
    if (hit === term.negate) return false;
  }
  return true;
}
