/**
 * Scores labelled cases against controls, one line at a time: the lines come from any
 * async source (a file streamed by read-lines.ts), and only counts, histograms and the
 * first few misses per control are kept, so memory does not grow with the dataset. PURE:
 * the caller gives the lines and the evaluator (in-process or through a server).
 */
import type { EvaluationResult } from '../model/index.js';
import { parseCase, type KnownNames } from './dataset.js';
import { DECISION_ROW, gateFailures, Tally } from './tally.js';
import type { CaseNote, EvalCase, EvalReport, Gates, LineDiagnostic, StepCase } from './types.js';

/** What evaluating one case gave. */
export interface CaseResult {
  result: EvaluationResult;
  /** Milliseconds per control (in-process), or null: then `elapsedMs` is every control's time. */
  timings: ReadonlyMap<string, number> | null;
  elapsedMs: number;
  /** Per matched control, its excerpt of the value with matched values masked (in-process only). */
  excerpts: ReadonlyMap<string, string> | null;
  /** The case's text masked, for listing a miss. */
  maskedText(): string;
}

/** Evaluates one case: in-process (in-process.ts) or through a server (server-evaluator.ts). */
export interface CaseEvaluator {
  readonly via: string;
  readonly known: KnownNames;
  evaluate(c: StepCase): CaseResult | Promise<CaseResult>;
  /** A fresh, empty session: the steps of one multi-step case, evaluated in order in it. */
  session(): CaseSession;
}

/** One multi-step case's session: each step sees the labels the steps before it added. */
export interface CaseSession {
  evaluate(c: StepCase): CaseResult | Promise<CaseResult>;
}

export interface RunEvalOptions {
  dataset: string;
  gates?: Gates;
}

export async function runEval(lines: AsyncIterable<string>, evaluator: CaseEvaluator, options: RunEvalOptions): Promise<EvalReport> {
  const tally = new Tally();
  const diagnostics: LineDiagnostic[] = [];
  let lineNo = 0;
  let cases = 0;
  for await (const text of lines) {
    lineNo++;
    const parsed = parseCase(text, lineNo, evaluator.known);
    if (parsed === null) continue;
    if ('diagnostic' in parsed) {
      diagnostics.push(parsed.diagnostic);
      continue;
    }
    const done = { steps: 0 };
    try {
      await evaluateCase(parsed.case, evaluator, tally, done);
      cases += done.steps;
    } catch (err) {
      // One case the server refused (a 400 for a step it reads differently) is a diagnostic; the rest still run.
      // A multi-step case stops at the refused step: the later steps' session would lack what it would have added.
      cases += done.steps;
      const why = err instanceof Error ? err.message : String(err);
      const id = parsed.case.kind === 'session' ? `${parsed.case.id}#${done.steps + 1}` : parsed.case.id;
      const rest = parsed.case.kind === 'session' && done.steps + 1 < parsed.case.steps.length ? ' (the later steps of the case were not evaluated)' : '';
      diagnostics.push({ line: lineNo, id, message: `not evaluated: ${why}${rest}`, hint: 'fix the step, or check the server with "guardctl validate --server"' });
    }
  }
  const scores = tally.scores();
  const gates = options.gates ?? {};
  const failures = gateFailures(scores, gates);
  return {
    dataset: options.dataset,
    via: evaluator.via,
    cases,
    controls: scores,
    diagnostics,
    gates: { min_precision: gates.minPrecision ?? null, min_recall: gates.minRecall ?? null, failures },
    passed: diagnostics.length === 0 && failures.length === 0 && cases > 0,
  };
}

/** Scores `c`, counting in `done.steps` each step scored (a step case is one). */
async function evaluateCase(c: EvalCase, evaluator: CaseEvaluator, tally: Tally, done: { steps: number }): Promise<void> {
  switch (c.kind) {
    case 'step': {
      const pending = evaluator.evaluate(c);
      scoreStep(c, pending instanceof Promise ? await pending : pending, tally);
      done.steps++;
      return;
    }
    case 'session': {
      const session = evaluator.session();
      for (const step of c.steps) {
        const pending = session.evaluate(step);
        scoreStep(step, pending instanceof Promise ? await pending : pending, tally);
        done.steps++;
      }
      return;
    }
  }
}

function scoreStep(c: StepCase, r: CaseResult, tally: Tally): void {
  const { result } = r;
  // Shadow controls count: measuring one before it enforces is what eval is for.
  const matched = new Map<string, string>();
  for (const m of [...result.matches, ...result.shadow_matches]) matched.set(m.control_name, m.result.message ?? '');
  for (const e of result.errors) tally.error(e.control_name);
  const ran = [...result.matches, ...result.shadow_matches, ...result.non_matches, ...result.errors];
  for (const m of new Set(ran.map((x) => x.control_name))) tally.time(m, r.timings?.get(m) ?? r.elapsedMs);
  for (const [name, want] of c.expect.triggers) {
    const got = matched.has(name);
    tally.score(name, want, got, () => noteOf(c, got ? (r.excerpts?.get(name) ?? matched.get(name) ?? '') : r.maskedText()));
  }
  if (c.expect.decision !== undefined) {
    const want = c.expect.decision;
    const note = () => noteOf(c, `expected ${want}, got ${result.decision}`);
    if (want === 'allow') tally.score(DECISION_ROW, false, result.decision !== 'allow', note, 'decision');
    else tally.score(DECISION_ROW, true, result.decision === want, note, 'decision');
  }
}

function noteOf(c: StepCase, detail: string): CaseNote {
  return { id: c.id, line: c.line, detail };
}
