/**
 * A schema change of one dialect. Each dialect keeps its migrations as an ordered,
 * append-only list: a migration, once released, is never edited; later changes append.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The migrations in the order they apply, whatever order the list was written in. */
export function inVersionOrder(migrations: readonly Migration[]): Migration[] {
  return [...migrations].sort((a, b) => a.version - b.version);
}
