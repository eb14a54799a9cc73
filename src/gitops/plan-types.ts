/** PURE: the parts of a plan that its control, agent and policy halves share. */

export interface Change {
  /** Field path, for example `action.decision` or `enabled`. */
  path: string;
  /** Absent (undefined) when the field is added or removed. */
  before?: unknown;
  after?: unknown;
}

/**
 * A control of the directory's name on the server that this directory does not own; or,
 * with `op`, a link or unlink of a control that a watched directory keeps (the server
 * refuses every write naming such a control, so apply could not make it).
 */
export interface Conflict {
  name: string;
  /** Who owns it now: null when made by hand. */
  managed_by: string | null;
  changes: Change[];
  /** Set for a link conflict: the agent whose link to `name` the plan would change. */
  agent_name?: string;
  op?: 'link' | 'unlink';
}

