/** What a replay found: plain data for the plan renderers (text, JSON, markdown). */
import type { Stage, StepType } from '../model/index.js';

export type ReplayDecision = 'allow' | 'deny' | 'steer' | 'ask';

/** One recorded step as a source delivers it: unchecked until replay parses it. */
export interface RawRecord {
  /** Where it came from, for warnings: `line 7` or `recording 1234`. */
  label: string;
  value: unknown;
  /** When the step was recorded (epoch ms): rate, budget and repeat controls count it then. */
  at?: number;
}

export interface ReplayExample {
  label: string;
  agent_name: string;
  stage: Stage;
  step_type: StepType;
  step_name: string;
  /** The step's input as JSON, cut to a short excerpt. */
  input_excerpt: string;
  /** The controls responsible for this step's change. */
  controls: string[];
}

export interface ReplayChange {
  from: ReplayDecision;
  to: ReplayDecision;
  count: number;
  /**
   * Controls responsible, with how many changed steps each decided: for a change to deny or
   * steer, the controls that now decide; for a change to allow, the ones that decided before.
   */
  controls: Record<string, number>;
  examples: ReplayExample[];
}

export interface ReplayReport {
  /** Records read from the source, valid or not. */
  total: number;
  /** Records re-evaluated. */
  evaluated: number;
  /** Records that no longer fit the model (or were not JSON): counted and left out. */
  skipped: number;
  /** The first few reasons for skipping, each naming the record. */
  warnings: string[];
  changes: ReplayChange[];
  /** Steps whose decision stayed the same, per decision. */
  unchanged: Record<ReplayDecision, number>;
  /** Where the steps came from (`server` or a file path). */
  source: string;
  /** For the server's recordings: whether it records steps at all; absent for a file. */
  recording?: boolean;
}
