/**
 * PURE: which table references of a statement a CTE stands for. PostgreSQL looks a name up
 * in the WITH lists of the queries around it, innermost first, and only for a FROM item
 * written without a schema; a DML target, a COPY or TRUNCATE table, a qualified name always
 * name a table. tree-reader.ts marks each reference `free` when it is such a FROM item and
 * calls resolveCtes when a node with a WITH closes.
 */

/** A table reference while its statement is read: `free` when a CTE of that name could stand for it. */
export interface Ref {
  schema: string | null;
  name: string;
  free: boolean;
  cte: boolean;
}

/** A CTE of a WITH: its name, and the refs its query holds (indexes into the statement's refs). */
export interface Cte {
  name: string;
  start: number;
  end: number;
}

/**
 * Marks the free refs from `start` that a CTE of `ctes` stands for: in a CTE's own query only
 * the CTEs written before it are visible (all of them with RECURSIVE), in the rest of the
 * query all are. Refs an inner WITH resolved are already marked.
 */
export function resolveCtes(refs: Ref[], start: number, ctes: readonly Cte[], recursive: boolean): void {
  for (let i = start; i < refs.length; i++) {
    const ref = refs[i]!;
    if (!ref.free || ref.cte) continue;
    const inside = ctes.findIndex((c) => i >= c.start && i < c.end);
    const visible = inside < 0 || recursive ? ctes : ctes.slice(0, inside);
    if (visible.some((c) => c.name === ref.name)) ref.cte = true;
  }
}

