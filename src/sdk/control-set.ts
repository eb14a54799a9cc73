/**
 * An agent's controls as the SDK holds them between refreshes: compiled once for
 * in-process evaluation, plus the scope of every `execution: server` control so that a
 * step only goes to the server when one of those could apply.
 */
import { compileControls, type CompiledControlSet } from '../engine/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { ControlRecord, JsonObject } from '../model/index.js';
import { compileScope, type ScopeMatcher } from './scope.js';

export interface ScopedControl {
  control_id: number;
  name: string;
  matches: ScopeMatcher;
}

export interface AgentControlSet {
  readonly records: readonly ControlRecord[];
  readonly compiled: CompiledControlSet;
  /** Enabled `execution: server` controls. */
  readonly server: readonly ScopedControl[];
  /** Enabled `execution: sdk` controls the engine could not compile here (an evaluator missing in this process, for instance). */
  readonly broken: ReadonlyArray<ScopedControl & { reason: string }>;
  /** Whether any enabled `execution: sdk` control compiled (else the engine is not called at all). */
  readonly hasLocal: boolean;
  readonly actionMetadata: ReadonlyMap<number, JsonObject | null>;
  /** The store revision the records were read at (sent with events); null when not known. */
  readonly setRevision: number | null;
}

export function buildControlSet(
  records: readonly ControlRecord[],
  registry: EvaluatorRegistry,
  setRevision: number | null = null,
): AgentControlSet {
  const live = records.filter((r) => r.enabled && r.data !== null && r.data.enabled);
  const compiled = compileControls(
    live.map((r) => ({ control_id: r.control_id, name: r.name, data: r.data })),
    registry,
  );
  const skipped = new Map<number, string>();
  for (const s of compiled.skipped) {
    skipped.set(s.control_id, s.issues.map((i) => `${i.field}: ${i.message}`).join('; '));
  }
  const server: ScopedControl[] = [];
  const broken: Array<ScopedControl & { reason: string }> = [];
  const actionMetadata = new Map<number, JsonObject | null>();
  let hasLocal = false;
  for (const record of live) {
    const data = record.data!;
    actionMetadata.set(record.control_id, data.action.metadata ?? null);
    const scoped = { control_id: record.control_id, name: record.name, matches: compileScope(data.scope) };
    if (data.execution === 'server') server.push(scoped);
    else {
      const reason = skipped.get(record.control_id);
      if (reason !== undefined) broken.push({ ...scoped, reason });
      else hasLocal = true;
    }
  }
  return Object.freeze({ records, compiled, server, broken, hasLocal, actionMetadata, setRevision });
}
