/**
 * The three workloads every throughput figure is measured on, each a set of 50 controls
 * for `bench-bot` and the request bodies the load generator sends in turn:
 * - best case: bench/server.ts's step and controls. Every control in scope needs words the
 *   query does not hold, so the literal prefilter rules all of them out: no evaluator runs.
 *   It measures HTTP handling, scope filtering and the prefilter.
 * - realistic: six steps in turn (SQL queries, an e-mail, a prompt, model outputs, one of
 *   them 2 KB). Two of the six reach full evaluator runs (a destructive query, the long
 *   output, where RE2 runs over the whole text), one more runs a few short checks, and two
 *   match (a deny and a log).
 * - worst allowed: every control in scope finds its literals in an 8 KB query and runs to
 *   its end (one regex matches at the very end, so the field's combined scan rules nothing
 *   out). Texts of 16 KB and more are searched on threads, off the event loop
 *   (src/evaluators/regex/search-pool.ts): 8 KB is in the range searched in line.
 * What each evaluation did is counted, not assumed: bench/work-counter.ts.
 */
import type { ControlDataInput } from '../src/model/index.js';
import { benchControls, EVALUATION_BODY } from './best-case.js';

export type WorkloadName = 'best' | 'realistic' | 'worst';

export interface Workload {
  name: WorkloadName;
  /** How the README and the table name it. */
  title: string;
  /** Request bodies, sent in turn on every connection. */
  bodies: string[];
  controls(): Array<{ name: string; data: ControlDataInput }>;
}

type Scope = NonNullable<ControlDataInput['scope']>;

function ctl(
  scope: Scope,
  path: string,
  evaluator: ControlDataInput['evaluator'],
  decision: 'deny' | 'warn' | 'log' = 'deny',
): ControlDataInput {
  return { scope, selector: { path }, evaluator, action: { decision } };
}
const regex = (pattern: string) => ({ name: 'regex', config: { pattern } });
const contains = (values: string[]) => ({ name: 'list', config: { values, match_mode: 'contains' } });

/** 50 controls in all: `inScope` first, then controls for tools this workload never calls. */
function fifty(inScope: ControlDataInput[]): Array<{ name: string; data: ControlDataInput }> {
  const all = inScope.map((data, i) => ({ name: `bench-${i}`, data }));
  for (let i = all.length; i < 50; i++) {
    const scope: Scope = i % 2 ? { step_types: ['tool'], step_names: [`other_tool_${i}`], stages: ['pre'] } : { step_types: ['tool'], step_names: [`other_tool_${i}`], stages: ['post'] };
    const evaluator = i % 2 ? contains([`forbidden_${i}`, 'drop']) : regex(`(?i)\\bsecret_${i}\\b`);
    all.push({ name: `bench-${i}`, data: ctl(scope, 'input', evaluator) });
  }
  return all;
}

const body = (stage: 'pre' | 'post', step: Record<string, unknown>) => JSON.stringify({ agent_name: 'bench-bot', stage, step });

const SQL: Scope = { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] };
const EMAIL: Scope = { step_types: ['tool'], step_names: ['send_email'], stages: ['pre'] };
const PROMPT: Scope = { step_types: ['llm'], stages: ['pre'] };
const OUTPUT: Scope = { step_types: ['llm'], stages: ['post'] };

function realisticControls(): Array<{ name: string; data: ControlDataInput }> {
  return fifty([
    ctl(SQL, 'input.query', regex('(?i)\\b(drop|truncate|alter)\\s+table\\b')),
    ctl(SQL, 'input.query', regex('(?i)\\bdelete\\s+from\\s+\\w+\\s*(;|$)')),
    ctl(SQL, 'input.query', regex('(?i)\\bpg_sleep\\s*\\(')),
    ctl(SQL, 'input.query', regex('(?i)\\bunion\\s+(all\\s+)?select\\b')),
    ctl(SQL, 'input.query', contains(['information_schema', 'pg_catalog'])),
    ctl(EMAIL, 'input.to', contains(['@competitor.example'])),
    ctl(EMAIL, 'input.body', regex('\\b\\d{3}-\\d{2}-\\d{4}\\b')),
    ctl(PROMPT, 'input', contains(['ignore previous instructions', 'reveal your system prompt'])),
    ctl(PROMPT, 'input', regex('(?i)\\b(password|passwd)\\s*[:=]'), 'warn'),
    ctl(OUTPUT, 'output', regex('\\b\\d{3}-\\d{2}-\\d{4}\\b')),
    ctl(OUTPUT, 'output', regex('[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}'), 'log'),
    ctl(OUTPUT, 'output', regex('\\b(?:\\d[ -]?){13,16}\\b')),
    ctl(OUTPUT, 'output', regex('\\b(sk|pk)_(live|test)_[0-9a-zA-Z]{16,}\\b')),
    ctl(OUTPUT, 'output', contains(['idiot', 'stupid', 'shut up']), 'warn'),
  ]);
}

/** About 2 KB of model output: an order summary that names a support address (the log control's match). */
const LONG_OUTPUT = [
  'Here is a summary of the three most recent orders for this customer.',
  'Order 1 (placed on Monday) contained two pairs of running shoes and a rain jacket; it shipped from the Rotterdam warehouse and was delivered on Thursday without issues.',
  'Order 2 (placed on Wednesday) contained a replacement charger. The customer reported that the first charger stopped working after a week, so the replacement was sent free of charge under the warranty policy.',
  'Order 3 (placed yesterday) is still being prepared. It contains a backpack, two water bottles and a set of hiking socks; the expected delivery window is three to five working days.',
  'Suggested follow-up: thank the customer for their loyalty, confirm that the charger replacement works as expected, and offer a ten percent discount on their next purchase of outdoor equipment.',
  'If the customer has further questions about delivery times or the warranty, they can reply to this message or write to support@shop.example, where the team answers within one working day.',
  'Notes for the agent: the customer prefers e-mail over phone calls, has opted in to the newsletter, and asked in the past to receive invoices as PDF attachments rather than links.',
  'The loyalty programme status is silver; two more orders this year would move the account to gold, which includes free express shipping and early access to seasonal sales.',
  'No open complaints are recorded for this account, and the last satisfaction survey was answered with the highest score in every category, including delivery speed and packaging.',
  'Summary ends here. Please review the suggested follow-up before sending anything to the customer, and keep the tone friendly and brief.',
].join(' ');

const REALISTIC_BODIES = [
  // Ruled out by the prefilter: no control's words.
  body('pre', { type: 'tool', name: 'run_sql', input: { query: 'SELECT id, email FROM customers WHERE region = $1 ORDER BY created_at DESC LIMIT 50', params: ['eu'] } }),
  // Full runs, and a deny.
  body('pre', { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE staging_orders; SELECT count(*) FROM orders', params: [] } }),
  // Short checks: the address list, an SSN regex over a short body.
  body('pre', { type: 'tool', name: 'send_email', input: { to: 'alice@customer.example', subject: 'Your order', body: 'Your order 1042 has shipped and should arrive on Friday.' } }),
  // The injection list runs; the password regex is ruled out by its words.
  body('pre', { type: 'llm', name: 'gpt-4o', input: "Summarise the customer's last three orders and suggest a follow-up." }),
  // 2 KB of output: RE2 over the whole text for three regexes, and a log match.
  body('post', { type: 'llm', name: 'gpt-4o', input: 'Summarise the orders.', output: LONG_OUTPUT }),
  // A short output: the combined scan rules the regexes out.
  body('post', { type: 'llm', name: 'gpt-4o', input: 'Say thanks.', output: 'Thank you for your order! We will be in touch soon.' }),
];

/** About 8 KB of SQL holding every in-scope control's words, never in the order a control looks for; the last line matches one control. */
function worstQuery(): string {
  const line =
    "SELECT id, note FROM audit_log WHERE note LIKE '%drop%' OR note LIKE '%table%' OR note LIKE '%delete%' " +
    "OR note LIKE '%pg_sleep%' OR note LIKE '%union%' OR note LIKE '%select password%' OR note LIKE '%grant%' OR note LIKE '%prod_%' " +
    "OR note LIKE '%xp_%' OR note LIKE '%outfile%' OR note LIKE '%information_schema%' OR note LIKE '%shutdown%'\n";
  let text = '';
  while (text.length + line.length < 8 * 1024 - 32) text += line;
  return `${text}-- bypass-guard`;
}

function worstControls(): Array<{ name: string; data: ControlDataInput }> {
  return fifty([
    ctl(SQL, 'input.query', regex('(?i)\\b(drop|truncate)\\s+table\\s+prod_\\w+')),
    ctl(SQL, 'input.query', regex('(?i)\\bdelete\\s+from\\s+\\w+\\s*;')),
    ctl(SQL, 'input.query', regex('(?i)\\bpg_sleep\\s*\\(\\s*\\d{3,}')),
    ctl(SQL, 'input.query', regex('(?i)\\bunion\\s+all\\s+select\\s+password\\b')),
    ctl(SQL, 'input.query', regex('(?i)\\bgrant\\s+all\\s+on\\b')),
    ctl(SQL, 'input.query', regex('(?i)--\\s*bypass-guard$'), 'log'),
    ctl(SQL, 'input.query', contains(['xp_cmdshell', 'sp_configure'])),
    ctl(SQL, 'input.query', contains(['into outfile', 'load_file('])),
    ctl(SQL, 'input.query', contains(['information_schema.tables', 'pg_catalog.pg_user'])),
    ctl(SQL, 'input.query', contains(['; shutdown', '; drop database'])),
  ]);
}

export const WORKLOADS: Record<WorkloadName, Workload> = {
  best: {
    name: 'best',
    title: 'best case (prefilters rule out all 10 in scope)',
    bodies: [EVALUATION_BODY],
    controls: benchControls,
  },
  realistic: {
    name: 'realistic',
    title: 'realistic (6 steps in turn, 2 KB output among them)',
    bodies: REALISTIC_BODIES,
    controls: realisticControls,
  },
  worst: {
    name: 'worst',
    title: 'worst allowed (10 in scope, each runs to the end of an 8 KB query)',
    bodies: [body('pre', { type: 'tool', name: 'run_sql', input: { query: worstQuery() } })],
    controls: worstControls,
  },
};
