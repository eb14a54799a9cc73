/** PURE: libpg-query's parse tree nodes as plain JSON values (`{"A_Const": {...}}`). */
export type Node = Record<string, unknown>;

export const isNode = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
