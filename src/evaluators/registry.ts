/**
 * The evaluators a server knows: built-ins plus loaded plugins. Each declares a name,
 * a description and the JSON Schema of its config (what GET /evaluators serves). Configs
 * are checked here when a control is saved or compiled, never while a step is evaluated.
 */
import { fieldIssuesOf, OnErrorSchema, type FieldIssue, type JsonObject, type OnError } from '../model/index.js';
import { listEvaluator } from './list/index.js';
import { piiEvaluator } from './pii/index.js';
import { regexEvaluator } from './regex/index.js';
import { rateEvaluator } from './rate/index.js';
import { budgetEvaluator } from './budget/index.js';
import { repeatEvaluator } from './repeat/index.js';
import { jsonEvaluator } from './json/index.js';
import { sqlEvaluator } from './sql/index.js';
import { secretsEvaluator } from './secrets/index.js';
import { promptInjectionEvaluator } from './prompt-injection/index.js';
import { jsonSchemaCheck, type JsonSchemaCheck } from './json-schema.js';
import { evaluatorPluginSpecs, loadEvaluatorPlugins } from './load-plugins.js';
import { ConfigError, type CompiledCheck, type EvaluatorDefinition, type PartCaches } from './types.js';

/** Whether an evaluator's verdict depends on the steps checked before it (it declares `stateful` or `perSession`). */
export function countsSteps(def: Pick<EvaluatorDefinition, 'stateful' | 'perSession'>): boolean {
  return def.stateful !== undefined || def.perSession === true;
}

export interface EvaluatorInfo {
  name: string;
  description: string;
  config_schema: JsonObject;
  /** Its verdict depends on the steps checked before (`stateful` or `perSession`): a client of the server tells a counter from a check of the value alone. */
  counts: boolean;
}

/** A compiled evaluator config: the check plus the control-level key `on_error` if given. */
export interface CompiledEvaluator {
  check: CompiledCheck;
  onError: OnError | undefined;
  /** Why the evaluator needs the server (EvaluatorDefinition.stateful); undefined for most. */
  stateful: string | undefined;
  /** Counts per session (EvaluatorDefinition.perSession). */
  perSession: boolean;
}

export type CompileResult = { ok: true; compiled: CompiledEvaluator } | { ok: false; issues: FieldIssue[] };

export class EvaluatorRegistry {
  readonly #defs = new Map<string, EvaluatorDefinition>();
  /** Plugins' config schemas, compiled with ajv on first use (built-ins check with zod). */
  readonly #schemaChecks = new Map<string, JsonSchemaCheck>();

  /** Adds an evaluator; a second evaluator with a taken name is a mistake, not an override. */
  register(def: EvaluatorDefinition): this {
    if (this.#defs.has(def.name)) throw new Error(`evaluator "${def.name}" is already registered`);
    this.#defs.set(def.name, def);
    return this;
  }

  get(name: string): EvaluatorDefinition | undefined {
    return this.#defs.get(name);
  }

  has(name: string): boolean {
    return this.#defs.has(name);
  }

  names(): string[] {
    return [...this.#defs.keys()];
  }

  list(): EvaluatorInfo[] {
    return [...this.#defs.values()].map((d) => ({
      name: d.name,
      description: d.description,
      config_schema: d.configSchema,
      counts: countsSteps(d),
    }));
  }

  /**
   * Checks `config` for evaluator `name`: the shared `on_error` key, then the evaluator's
   * schema, then its own compile step (a pattern that does not compile). Field paths are
   * relative to the control data: `at` is where the evaluator spec sits (default
   * `evaluator`, or for example `condition.and[1].evaluator`).
   */
  validateConfig(name: string, config: unknown, at = 'evaluator'): FieldIssue[] {
    const result = this.compile(name, config, at);
    return result.ok ? [] : result.issues;
  }

  /**
   * validateConfig that also returns the compiled check when the config is valid. With
   * `parts`, the evaluator may share compiled parts with other controls (see PartCache);
   * `selectorPath` is the path of the selector the check reads (CompileSite).
   */
  compile(name: string, config: unknown, at = 'evaluator', parts?: PartCaches, controlId = 0, selectorPath?: string): CompileResult {
    const def = this.#defs.get(name);
    if (!def) {
      const known = this.names().map((n) => `"${n}"`).join(', ');
      return {
        ok: false,
        issues: [{ field: `${at}.name`, code: 'unknown_evaluator', message: `unknown evaluator "${name}"; known: ${known}` }],
      };
    }
    const configPath = `${at}.config`;
    if (typeof config !== 'object' || config === null || Array.isArray(config)) {
      return { ok: false, issues: [{ field: configPath, code: 'invalid_type', message: 'config must be an object' }] };
    }
    const { on_error: onErrorRaw, ...rest } = config as JsonObject;
    const issues: FieldIssue[] = [];
    let onError: OnError | undefined;
    if (onErrorRaw !== undefined) {
      const parsed = OnErrorSchema.safeParse(onErrorRaw);
      if (parsed.success) onError = parsed.data;
      else issues.push({ field: `${configPath}.on_error`, code: 'invalid_value', message: 'on_error must be "allow" or "deny"' });
    }
    if (def.zodSchema) {
      const parsed = def.zodSchema.safeParse(rest);
      if (!parsed.success) issues.push(...fieldIssuesOf(parsed.error, [configPath]));
    } else {
      let schemaCheck = this.#schemaChecks.get(def.name);
      if (schemaCheck === undefined) {
        schemaCheck = jsonSchemaCheck(def.configSchema);
        this.#schemaChecks.set(def.name, schemaCheck);
      }
      issues.push(...schemaCheck(rest, configPath));
    }
    if (issues.length > 0) return { ok: false, issues };
    try {
      const site = selectorPath === undefined ? { controlId, at } : { controlId, at, selectorPath };
      const check = def.compile(rest, parts?.forEvaluator(def.name), site);
      return { ok: true, compiled: { check, onError, stateful: def.stateful, perSession: def.perSession === true } };
    } catch (err) {
      if (err instanceof ConfigError) {
        const field = err.field === '' ? configPath : `${configPath}.${err.field}`;
        return { ok: false, issues: [{ field, code: 'invalid_config', message: err.message }] };
      }
      const message = err instanceof Error ? err.message : String(err);
      return { ok: false, issues: [{ field: configPath, code: 'invalid_config', message }] };
    }
  }
}

export interface DefaultRegistryOptions {
  /** Extra definitions registered after the built-ins (for example plugins already loaded). */
  extra?: EvaluatorDefinition[];
}

/** A registry holding the built-in evaluators `regex`, `list`, `json`, `sql`, `pii`, `secrets`, `rate`, `budget`, `repeat` and `prompt_injection`. */
export function createDefaultRegistry(options: DefaultRegistryOptions = {}): EvaluatorRegistry {
  const registry = new EvaluatorRegistry().register(regexEvaluator).register(listEvaluator);
  registry.register(jsonEvaluator).register(sqlEvaluator);
  registry.register(piiEvaluator).register(secretsEvaluator);
  registry.register(rateEvaluator).register(budgetEvaluator).register(repeatEvaluator);
  registry.register(promptInjectionEvaluator);
  for (const def of options.extra ?? []) registry.register(def);
  return registry;
}

/**
 * The registry a server runs with: the built-ins plus the plugins the environment asks for
 * (GUARD_EVALUATORS, GUARD_AI_VENDOR_ENABLED; see evaluatorPluginSpecs). Relative plugin
 * paths resolve against `baseDir` (the working directory by default).
 */
export async function createRegistryFromEnv(
  env: Record<string, string | undefined>,
  baseDir: string = process.cwd(),
): Promise<EvaluatorRegistry> {
  const registry = createDefaultRegistry();
  await loadEvaluatorPlugins(registry, evaluatorPluginSpecs(env), baseDir, { env });
  return registry;
}

export { loadEvaluatorPlugins, evaluatorPluginSpecs };
