/**
 * Loading custom evaluators from ES modules named by configuration, for example
 * `GUARD_EVALUATORS=./my-evaluators.js,@acme/guard-evaluators`. A plugin module exports
 * its definitions as `export default [...]` (or `export const evaluators = [...]`), or a
 * function `({ env }) => [...]` when what it offers depends on the environment (the
 * bundled `ai_vendor.scorer` does this). Every definition is checked before it is
 * registered; a bad plugin stops startup with an error naming the file and the problem.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { UserError } from '../errors.js';
import type { EvaluatorDefinition, PluginContext } from './types.js';
import { compileJsonSchema } from './json-schema.js';

export type { PluginContext } from './types.js';

/** Where plugins are registered: the EvaluatorRegistry (registry.ts), by its shape. */
interface PluginRegistry {
  has(name: string): boolean;
  register(definition: EvaluatorDefinition): unknown;
}

/** Names that load the plugins shipped with guardctl instead of a file. */
const BUNDLED: Record<string, () => Promise<unknown>> = {
  'ai_vendor.scorer': () => import('./ai-vendor-scorer/index.js'),
  'ai-vendor-scorer': () => import('./ai-vendor-scorer/index.js'),
};

/**
 * A plugin that cannot be used: the user's to fix (the path in GUARD_EVALUATORS, or the
 * module), so one line saying so rather than a stack trace.
 */
export class PluginLoadError extends UserError {
  constructor(problem: string, options?: { cause: unknown }) {
    super(`${problem}: fix the module, or remove it from GUARD_EVALUATORS`);
    if (options) this.cause = options.cause;
    this.name = 'PluginLoadError';
  }
}

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/**
 * The plugin specs the environment asks for: the comma-separated GUARD_EVALUATORS, plus
 * the bundled vendor scorer when GUARD_AI_VENDOR_ENABLED is true.
 */
export function evaluatorPluginSpecs(env: Record<string, string | undefined>): string[] {
  const specs = (env.GUARD_EVALUATORS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const vendorOn = /^(1|true|yes|on)$/i.test(env.GUARD_AI_VENDOR_ENABLED ?? '');
  if (vendorOn && !specs.some((s) => s in BUNDLED)) specs.push('ai_vendor.scorer');
  return specs;
}

/**
 * Imports each plugin module and registers its definitions. Returns the names added.
 * Relative paths resolve against `baseDir`; other specs are package names.
 */
export async function loadEvaluatorPlugins(
  registry: PluginRegistry,
  specs: string[],
  baseDir: string,
  context: PluginContext = { env: process.env },
): Promise<string[]> {
  const added: string[] = [];
  for (const spec of specs) {
    const where = describeSpec(spec, baseDir);
    let mod: unknown;
    try {
      mod = await importSpec(spec, baseDir);
    } catch (err) {
      throw new PluginLoadError(`cannot load evaluator plugin ${where} (GUARD_EVALUATORS): ${importFailure(err)}`, { cause: err });
    }
    const defs = await definitionsOf(mod, where, context);
    for (const [i, def] of defs.entries()) {
      const problem = problemOf(def);
      if (problem) throw new PluginLoadError(`evaluator plugin ${where}: definition [${i}] ${problem}`);
      const valid = def as EvaluatorDefinition;
      if (registry.has(valid.name)) {
        throw new PluginLoadError(`evaluator plugin ${where}: evaluator "${valid.name}" is already registered`);
      }
      registry.register(valid);
      added.push(valid.name);
    }
  }
  return added;
}

function describeSpec(spec: string, baseDir: string): string {
  if (spec in BUNDLED) return `"${spec}" (bundled)`;
  return isPath(spec) ? `"${spec}" (${resolve(baseDir, spec)})` : `"${spec}"`;
}

/** Node's "Cannot find module X imported from <our file>": the second half is guardctl's, not the user's. */
function importFailure(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return (err as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND' ? message.replace(/ imported from .*$/s, '') : message;
}

function isPath(spec: string): boolean {
  return spec.startsWith('.') || isAbsolute(spec);
}

async function importSpec(spec: string, baseDir: string): Promise<unknown> {
  const bundled = BUNDLED[spec];
  if (bundled) return bundled();
  const target = isPath(spec) ? pathToFileURL(resolve(baseDir, spec)).href : spec;
  return import(target);
}

async function definitionsOf(mod: unknown, where: string, context: PluginContext): Promise<unknown[]> {
  const m = mod as { default?: unknown; evaluators?: unknown };
  let exported = m.default ?? m.evaluators;
  if (typeof exported === 'function') exported = await (exported as (c: PluginContext) => unknown)(context);
  if (exported === undefined) {
    throw new PluginLoadError(`evaluator plugin ${where}: exports no evaluators (expected "export default [...]" or "export const evaluators = [...]")`);
  }
  if (!Array.isArray(exported)) {
    if (typeof exported === 'object' && exported !== null) return [exported];
    throw new PluginLoadError(`evaluator plugin ${where}: the export must be an array of evaluator definitions`);
  }
  // Each entry is checked by problemOf before it is registered.
  return exported as unknown[];
}

/** What is wrong with a would-be definition, or null. */
function problemOf(def: unknown): string | null {
  if (typeof def !== 'object' || def === null) return 'is not an object';
  const d = def as Record<string, unknown>;
  if (typeof d.name !== 'string' || !NAME_PATTERN.test(d.name)) {
    return 'needs a "name": letters, digits and . _ : - (at most 128 characters)';
  }
  const label = `"${d.name}"`;
  if (typeof d.description !== 'string' || d.description.trim() === '') return `${label} needs a "description" string`;
  const schema = d.configSchema;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    return `${label} needs a "configSchema" object (JSON Schema of its config)`;
  }
  if ((schema as Record<string, unknown>).type !== 'object') return `${label}: configSchema.type must be "object"`;
  const compiled = compileJsonSchema(schema);
  if (typeof compiled === 'string') return `${label}: configSchema is ${compiled}`;
  if (typeof d.compile !== 'function') return `${label} needs a "compile(config)" function`;
  if (d.zodSchema !== undefined && typeof (d.zodSchema as { safeParse?: unknown }).safeParse !== 'function') {
    return `${label}: zodSchema, when given, must be a zod schema`;
  }
  return null;
}
