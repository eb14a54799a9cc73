/** What `guardctl eval` reads and reports: plain data shared by the runner and every renderer. */
import type { Stage, Step } from '../model/index.js';

/** What a labelled case says the controls should conclude. */
export interface Expectation {
  /** The decision the whole step should get. */
  decision?: 'allow' | 'deny' | 'steer';
  /** Per control: whether it should match. Controls not named here are not scored for this case. */
  triggers: ReadonlyMap<string, boolean>;
}

/** One labelled case, as dataset.ts parses a line: one step, or the steps of one session. */
export type EvalCase = StepCase | SessionCase;

export interface StepCase {
  kind: 'step';
  id: string;
  /** 1-based line of the dataset. */
  line: number;
  /** Undefined: the controls of the directory (in-process) or the --agent default. */
  agent: string | undefined;
  stage: Stage;
  step: Step;
  /**
   * `data` lines (OpenAI Guardrails' eval format): the text is given to each control's
   * evaluator as the value its selector would have picked, whatever the selector and scope.
   */
  asSelected: boolean;
  expect: Expectation;
}

/**
 * A line `{id, agent?, steps: [{stage, step, expect}, ...]}`: its steps are evaluated in
 * order in one fresh session, so labels one step adds decide the later ones. Each step is
 * scored as a case of its own, `ID#n` (n from 1).
 */
export interface SessionCase {
  kind: 'session';
  id: string;
  line: number;
  agent: string | undefined;
  /** Each a step case (`asSelected` false) whose id is `ID#n`. */
  steps: StepCase[];
}

/** A dataset line that could not be evaluated, with why and what to do. */
export interface LineDiagnostic {
  line: number;
  /** The case id when the line had one. */
  id?: string;
  message: string;
  hint: string;
}

/** One case a control got wrong (or an error it raised), listed by id with a masked excerpt. */
export interface CaseNote {
  id: string;
  line: number;
  /** The control's message (matched values already masked by the engine), or the masked text. */
  detail: string;
}

export interface ControlScore {
  /** A control name, or `decision` for the step's decision against expect.decision. */
  name: string;
  kind: 'control' | 'decision';
  cases: number;
  tp: number;
  fp: number;
  tn: number;
  fn: number;
  errors: number;
  /** null when undefined (no predicted positives, no labelled positives). */
  precision: number | null;
  recall: number | null;
  f1: number | null;
  /** Milliseconds per check (in-process) or per request (--server); null without timings. */
  p50_ms: number | null;
  p95_ms: number | null;
  /** The first LIST_MAX of each; `*_total` counts them all. */
  misses: CaseNote[];
  false_positives: CaseNote[];
  misses_total: number;
  false_positives_total: number;
}

export interface Gates {
  minPrecision?: number | undefined;
  minRecall?: number | undefined;
}

export interface GateFailure {
  name: string;
  metric: 'precision' | 'recall';
  value: number;
  min: number;
}

export interface EvalReport {
  dataset: string;
  /** `in-process` or the server's URL. */
  via: string;
  cases: number;
  controls: ControlScore[];
  diagnostics: LineDiagnostic[];
  gates: { min_precision: number | null; min_recall: number | null; failures: GateFailure[] };
  /** True when no line was bad and every gate held: exit 0. */
  passed: boolean;
}
