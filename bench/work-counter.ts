/**
 * Counts the work evaluations do, for the benchmarks: evaluator checks called and calls
 * into RE2 (single patterns and the combined sets scan groups use). Bench-only, and never
 * installed in a process whose speed is measured: the counting wrappers add a call each.
 * A throughput benchmark counts in a separate server process (bench/server-child.ts,
 * `countWork`) sent the same steps.
 *
 * RE2 calls made on search threads (texts of 16 KB and more) are not seen here; the
 * workloads keep their texts shorter.
 */
import RE2 from 're2';
import { createDefaultRegistry, EvaluatorRegistry } from '../src/evaluators/registry.js';
import type { CompiledCheck, EvaluatorDefinition } from '../src/evaluators/types.js';

export interface WorkCounts {
  /** Evaluator checks called (each may still answer from its own prefilter without RE2). */
  checks: number;
  /** Calls into RE2: search, test and exec of single patterns, test and match of sets. */
  re2: number;
}

export const workCounts: WorkCounts = { checks: 0, re2: 0 };

type Method = (this: unknown, ...args: unknown[]) => unknown;

function patch(proto: Record<string, unknown>, names: string[]): () => void {
  const originals = names.map((name) => [name, proto[name] as Method] as const);
  for (const [name, original] of originals) {
    proto[name] = function counted(this: unknown, ...args: unknown[]) {
      workCounts.re2++;
      return original.apply(this, args);
    };
  }
  return () => {
    for (const [name, original] of originals) proto[name] = original;
  };
}

/** Counts every call into RE2 in this process from now on; returns the undo. */
export function countRe2Calls(): () => void {
  const undoSingle = patch(RE2.prototype as unknown as Record<string, unknown>, ['search', 'test', 'exec']);
  const undoSet = patch(RE2.Set.prototype as unknown as Record<string, unknown>, ['test', 'match']);
  return () => {
    undoSingle();
    undoSet();
  };
}

/**
 * The default registry with every check wrapped to count its calls. The wrapper carries the
 * check's own properties (its ScanHint), so the engine scans fields together as it would.
 */
export function countingRegistry(base: EvaluatorRegistry = createDefaultRegistry()): EvaluatorRegistry {
  const registry = new EvaluatorRegistry();
  for (const name of base.names()) {
    const def = base.get(name)!;
    const counted: EvaluatorDefinition = {
      ...def,
      compile(config, parts) {
        const check = def.compile(config, parts);
        const wrapper: CompiledCheck = (value, memo) => {
          workCounts.checks++;
          return check(value, memo);
        };
        return Object.assign(wrapper, check);
      },
    };
    registry.register(counted);
  }
  return registry;
}
