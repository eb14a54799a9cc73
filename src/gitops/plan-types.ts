/** PURE: the parts of a plan that its control, agent, policy and McpServer halves share. */
import { canonicalJson, isPlainObject } from './canonical.js';

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
  /**
   * Set when the plan deletes control `name` but these policies still bind it once the
   * plan is applied: the server refuses the delete (409 bound_by_policy).
   */
  bound_by?: Array<{ policy: string; managed_by: string | null }>;
}

/** Objects are compared key by key; arrays and scalars as whole values (easier to read). */
export function diffValues(path: string, before: unknown, after: unknown): Change[] {
  if (isPlainObject(before) && isPlainObject(after)) {
    const out: Change[] = [];
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    for (const key of keys) {
      const sub = path ? `${path}.${key}` : key;
      const b = before[key];
      const a = after[key];
      if (b === undefined && a === undefined) continue;
      if (b === undefined) out.push({ path: sub, after: a });
      else if (a === undefined) out.push({ path: sub, before: b });
      else out.push(...diffValues(sub, b, a));
    }
    return out;
  }
  if (canonicalJson(before) === canonicalJson(after)) return [];
  return [{ path: path || '(value)', before, after }];
}
