/** The saved plan (`plan --out FILE`): the operations plus the fingerprint of the server state. */
import { z } from 'zod';
import type { Plan } from './plan.js';
import { inPlanOrder, summarise, type Operation } from './plan.js';

export const PLAN_FILE_VERSION = 1;

export interface PlanFile {
  version: 1;
  created_at: string;
  server: string;
  fingerprint: string;
  directory: string;
  managed_by: string;
  operations: Operation[];
}

// Operations are checked loosely: the file is ours, but a hand-edited one must fail clearly.
const PlanFileSchema = z.object({
  version: z.literal(PLAN_FILE_VERSION),
  created_at: z.string(),
  server: z.string(),
  fingerprint: z.string().min(1),
  directory: z.string(),
  managed_by: z.string(),
  operations: z.array(
    z.looseObject({
      op: z.enum(['create_control', 'update_control', 'delete_control', 'create_agent', 'update_agent', 'link', 'unlink', 'create_policy', 'update_policy', 'delete_policy', 'create_mcp_server', 'update_mcp_server', 'delete_mcp_server']),
    }),
  ),
});

export function planFileOf(p: Plan, meta: { server: string; fingerprint: string; directory: string; now?: Date }): PlanFile {
  return {
    version: PLAN_FILE_VERSION,
    created_at: (meta.now ?? new Date()).toISOString(),
    server: meta.server,
    fingerprint: meta.fingerprint,
    directory: meta.directory,
    managed_by: p.managed_by,
    operations: p.operations,
  };
}

/** Parses a saved plan; returns an error message instead of throwing. */
export function parsePlanFile(text: string): { ok: true; file: PlanFile } | { ok: false; error: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, error: 'not JSON' };
  }
  const parsed = PlanFileSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return { ok: false, error: `not a guardctl plan file (${first ? `${first.path.join('.')}: ${first.message}` : 'invalid'})` };
  }
  return { ok: true, file: parsed.data as unknown as PlanFile };
}

/** The saved plan as a Plan; a hand-edited file's operations are put back in plan order. */
export function planOfFile(file: PlanFile): Plan {
  const operations = inPlanOrder(file.operations);
  return { managed_by: file.managed_by, operations, conflicts: [], kept: [], summary: summarise(operations, []) };
}
