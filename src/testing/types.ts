/** The result of a decision-test run: plain data shared by every renderer. */
import type { Diagnostic } from '../gitops/diagnostics.js';
import type { Stage, StepType } from '../model/index.js';

export type VerdictDecision = 'allow' | 'deny' | 'steer' | 'ask';

export interface CaseOutcome {
  /** The `kind: Test` document's name. */
  test: string;
  case: string;
  agent: string;
  stage: Stage;
  step_type: StepType;
  step_name: string;
  file: string;
  line: number;
  column: number;
  passed: boolean;
  expected: { decision: VerdictDecision; matched: string[]; not_matched: string[] };
  actual: {
    decision: VerdictDecision;
    /** Every control that matched (fail-closed errors included), in evaluation order. */
    matched: string[];
    /** The controls that produced the decision: the matching deny (or steer) controls. */
    deciding: string[];
    /** Controls whose evaluator failed (on_error decided). */
    errors: string[];
  };
  /** Controls in `expect.matched` that did not match. */
  missing_matched: string[];
  /** Controls in `expect.not_matched` that matched. */
  unexpected_matched: string[];
}

export interface Coverage {
  /** Enabled controls in the directory. */
  total: number;
  exercised: string[];
  /** Enabled controls that matched in no case. */
  unexercised: string[];
}

export interface TestRunReport {
  directory: string;
  cases: CaseOutcome[];
  /** Malformed documents and cases, unknown agents and controls: each with file:line:column. */
  diagnostics: Diagnostic[];
  coverage: Coverage;
  summary: {
    documents: number;
    total: number;
    passed: number;
    failed: number;
    /** Diagnostics of severity error (their cases did not run). */
    invalid: number;
  };
}

/** Exit code rule of `guardctl test`: 0 only when every case ran and passed. */
export function reportPassed(report: TestRunReport): boolean {
  return report.summary.failed === 0 && report.summary.invalid === 0 && report.summary.total > 0;
}
