/**
 * PURE: turns zod schemas into the `components.schemas` of the OpenAPI document. A schema
 * is converted twice: as a client sends it (`io: 'input'`: defaults optional, the input
 * side of transforms) and as the server answers with it (`io: 'output'`: defaults filled,
 * so always present). Where the two agree one component serves both; where they differ
 * and both are used, the request side is a second component named `<Name>Input`.
 */
import { z } from 'zod';

export type JsonSchema = Record<string, unknown>;
export type Io = 'input' | 'output';

const PREFIX = '#/components/schemas/';
/** Marks refs of the input pass until it is known which components the two passes share. */
const INPUT_MARK = '~input';

export class ComponentSchemas {
  /** Each named schema and its component name. */
  readonly #names = new Map<z.ZodType, string>();
  /** Named schemas a request or a response uses directly. */
  readonly #roots: Array<{ name: string; io: Io }> = [];

  /** Gives `schema` a component name (its first name is kept) and returns the name. */
  name(schema: z.ZodType, name: string): string {
    const known = this.#names.get(schema);
    if (known !== undefined) return known;
    if ([...this.#names.values()].includes(name)) throw new Error(`two schemas are named ${name} in the OpenAPI document`);
    this.#names.set(schema, name);
    return name;
  }

  /** A reference to `schema` as a request (`input`) or a response (`output`) uses it. */
  ref(schema: z.ZodType, io: Io, name: string): { $ref: string } {
    const id = this.name(schema, name);
    this.#roots.push({ name: id, io });
    return { $ref: `${PREFIX}${id}${io === 'input' ? INPUT_MARK : ''}` };
  }

  /**
   * Converts every named schema both ways and returns the components the recorded refs
   * reach, plus a function that rewrites the refs handed out by `ref` to their final names.
   * A request-side schema is named `<Name>Input` only when its response form is emitted too.
   */
  build(): { schemas: Record<string, JsonSchema>; resolve: <T>(value: T) => T } {
    const output = this.#convert('output');
    const input = this.#convert('input');
    const shared = sharedNames(input, output);
    const answered = new Set<string>();
    const reach = (name: string): void => {
      if (answered.has(name)) return;
      answered.add(name);
      for (const ref of refsOf(output[name])) reach(ref.slice(PREFIX.length));
    };
    for (const root of this.#roots) if (root.io === 'output') reach(root.name);

    const finalName = (ref: string): string => {
      const id = ref.slice(PREFIX.length);
      if (!id.endsWith(INPUT_MARK)) return id;
      const base = id.slice(0, -INPUT_MARK.length);
      return shared.has(base) || !answered.has(base) ? base : `${base}Input`;
    };
    const resolve = <T>(value: T): T => mapRefs(value, (ref) => `${PREFIX}${finalName(ref)}`);

    const schemas: Record<string, JsonSchema> = {};
    const visit = (id: string): void => {
      const isInput = id.endsWith(INPUT_MARK);
      const base = isInput ? id.slice(0, -INPUT_MARK.length) : id;
      // Shared components are their output form and hold output refs; input-only ones hold input refs.
      const source = isInput && !shared.has(base) ? input[base] : output[base];
      const target = finalName(`${PREFIX}${id}`);
      if (target in schemas) return;
      if (!source) throw new Error(`no schema named ${base}`);
      schemas[target] = resolve(source);
      for (const ref of refsOf(source)) visit(ref.slice(PREFIX.length));
    };
    for (const root of this.#roots) visit(root.io === 'input' ? `${root.name}${INPUT_MARK}` : root.name);
    return { schemas: Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b))), resolve };
  }

  #convert(io: Io): Record<string, JsonSchema> {
    const registry = z.registry<{ id: string }>();
    for (const [schema, id] of this.#names) registry.add(schema, { id });
    const { schemas } = z.toJSONSchema(registry, {
      io,
      unrepresentable: 'any',
      uri: (id) => `${PREFIX}${id}${io === 'input' ? INPUT_MARK : ''}`,
    });
    const out: Record<string, JsonSchema> = {};
    for (const [id, schema] of Object.entries(schemas)) out[id] = standalone(schema);
    return out;
  }
}

/** A query string or other inline schema, converted on its own (no component refs). */
export function inlineSchema(schema: z.ZodType, io: Io): JsonSchema {
  return standalone(z.toJSONSchema(schema, { io, unrepresentable: 'any' }));
}

/** Inside OpenAPI a component is a plain schema: no `$schema`, no `$id`. */
function standalone(schema: JsonSchema): JsonSchema {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return rest;
}

/**
 * The names whose input and output schemas are the same once refs to other shared names
 * are read as output refs. Starts from all and drops the ones that differ until none do,
 * so schemas that refer to each other (Condition) settle together.
 */
function sharedNames(input: Record<string, JsonSchema>, output: Record<string, JsonSchema>): Set<string> {
  const shared = new Set(Object.keys(output));
  for (let changed = true; changed; ) {
    changed = false;
    for (const name of shared) {
      const asOutput = mapRefs(input[name], (ref) => {
        const id = ref.slice(PREFIX.length, -INPUT_MARK.length);
        return shared.has(id) ? `${PREFIX}${id}` : ref;
      });
      if (JSON.stringify(asOutput) !== JSON.stringify(output[name])) {
        shared.delete(name);
        changed = true;
      }
    }
  }
  return shared;
}

function mapRefs<T>(value: T, map: (ref: string) => string): T {
  if (Array.isArray(value)) return value.map((v: unknown) => mapRefs(v, map)) as T;
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    out[key] = key === '$ref' && typeof v === 'string' && v.startsWith(PREFIX) ? map(v) : mapRefs(v, map);
  }
  return out as T;
}

function refsOf(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refsOf(v, found);
  else if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref' && typeof v === 'string' && v.startsWith(PREFIX)) found.push(v);
      else refsOf(v, found);
    }
  }
  return found;
}
