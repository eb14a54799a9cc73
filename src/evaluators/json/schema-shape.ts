/**
 * What a json control's schema is, read before it ever runs (docs/evaluators.md):
 * - whether it can recurse without moving into a property or an item (`{"$ref": "#"}`,
 *   `{"allOf": [{"$ref": "#/$defs/a"}]}` where `a` refers back): such a schema applies
 *   itself to the same value for ever, so it can never finish, and is refused when saved;
 * - whether its work on a value is bounded by the sizes of the two (no reference can make
 *   ajv walk a part of the schema more than once per part of the value, and no keyword
 *   compares items pairwise): only such a schema may run on the event loop, and only on a
 *   small value (json/index.ts). PURE.
 */

/** Keywords whose subschemas apply to the same value (they consume none of it). */
const IN_PLACE_LISTS = ['allOf', 'anyOf', 'oneOf'] as const;
const IN_PLACE_ONE = ['not', 'if', 'then', 'else'] as const;
const REF_KEYWORDS = ['$ref', '$dynamicRef', '$recursiveRef'] as const;
/** Keywords holding subschemas by name; any other subschema applies to a part of the value. */
const CHILD_MAPS = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'] as const;

type Schema = Record<string, unknown>;

interface Node {
  schema: Schema;
  /** JSON pointer from the root (`#/$defs/a`). */
  pointer: string;
  /** The resource the node belongs to (the nearest `$id` above it, or the root). */
  resource: Schema;
}

interface Index {
  nodes: Node[];
  bySchema: Map<Schema, Node>;
  /** `$id` values as written, and `$anchor`/`$dynamicAnchor` names per resource. */
  ids: Map<string, Schema>;
  anchors: Map<Schema, Map<string, Schema>>;
}

const isSchema = (v: unknown): v is Schema => v !== null && typeof v === 'object' && !Array.isArray(v);
const escape = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

function indexOf(root: Schema): Index {
  const index: Index = { nodes: [], bySchema: new Map(), ids: new Map(), anchors: new Map() };
  const visit = (schema: Schema, pointer: string, resource: Schema) => {
    if (index.bySchema.has(schema)) return;
    if (typeof schema.$id === 'string' && schema !== root) {
      resource = schema;
      index.ids.set(schema.$id.split('#')[0]!, schema);
    }
    const node: Node = { schema, pointer, resource };
    index.nodes.push(node);
    index.bySchema.set(schema, node);
    for (const key of ['$anchor', '$dynamicAnchor']) {
      const name = schema[key];
      if (typeof name !== 'string') continue;
      let names = index.anchors.get(resource);
      if (names === undefined) index.anchors.set(resource, (names = new Map<string, Schema>()));
      names.set(name, schema);
    }
    for (const [key, sub] of Object.entries(schema)) {
      const at = `${pointer}/${escape(key)}`;
      if (isSchema(sub) && key !== 'enum' && key !== 'const' && key !== 'default' && key !== 'examples') {
        const isMap = (CHILD_MAPS as readonly string[]).includes(key);
        if (isMap) for (const [k, s] of Object.entries(sub)) if (isSchema(s)) visit(s, `${at}/${escape(k)}`, resource);
        if (!isMap) visit(sub, at, resource);
      } else if (Array.isArray(sub) && key !== 'enum' && key !== 'examples' && key !== 'required' && key !== 'type') {
        sub.forEach((s, i) => {
          if (isSchema(s)) visit(s, `${at}/${i}`, resource);
        });
      }
    }
  };
  if (typeof root.$id === 'string') index.ids.set(root.$id.split('#')[0]!, root);
  visit(root, '#', root);
  return index;
}

/** The schema a local reference names, or undefined where it cannot tell (ajv then decides). */
function resolve(index: Index, from: Node, ref: string): Schema | undefined {
  const hash = ref.indexOf('#');
  const base = hash < 0 ? ref : ref.slice(0, hash);
  const fragment = hash < 0 ? '' : ref.slice(hash + 1);
  const resource = base === '' ? from.resource : index.ids.get(base);
  if (resource === undefined) return undefined;
  if (fragment === '' || fragment.startsWith('/')) {
    let at: unknown = resource;
    for (const raw of fragment.split('/').slice(1)) {
      let part: string;
      try {
        part = decodeURIComponent(raw);
      } catch {
        return undefined;
      }
      part = part.replaceAll('~1', '/').replaceAll('~0', '~');
      if (Array.isArray(at)) at = at[Number(part)];
      else if (isSchema(at)) at = at[part];
      else return undefined;
    }
    return isSchema(at) ? at : undefined;
  }
  return index.anchors.get(resource)?.get(fragment);
}

/** The subschemas that apply to the same value as `node`, references followed. */
function inPlaceOf(index: Index, node: Node, root: Schema): Schema[] {
  const out: Schema[] = [];
  const s = node.schema;
  for (const key of IN_PLACE_LISTS) {
    const list = s[key];
    if (Array.isArray(list)) for (const sub of list) if (isSchema(sub)) out.push(sub);
  }
  for (const key of IN_PLACE_ONE) if (isSchema(s[key])) out.push(s[key]);
  if (isSchema(s.dependentSchemas)) for (const sub of Object.values(s.dependentSchemas)) if (isSchema(sub)) out.push(sub);
  for (const key of REF_KEYWORDS) {
    const ref = s[key];
    if (typeof ref !== 'string') continue;
    const target = key === '$recursiveRef' ? root : resolve(index, node, ref);
    if (target !== undefined) out.push(target);
  }
  return out;
}

/** A place where the schema reaches itself without consuming the value, or null when none does. */
export interface InPlaceCycle {
  /** The pointer of the subschema the cycle returns to (`#`, `#/$defs/a`). */
  pointer: string;
  /** The pointers along the cycle, in order. */
  path: string[];
}

/** Finds a cycle of subschemas that apply to the same value (docs/evaluators.md). */
export function inPlaceCycleOf(schema: unknown): InPlaceCycle | null {
  if (!isSchema(schema)) return null;
  const index = indexOf(schema);
  const state = new Map<Schema, 'open' | 'done'>();
  const stack: Node[] = [];
  const search = (node: Node): InPlaceCycle | null => {
    state.set(node.schema, 'open');
    stack.push(node);
    for (const next of inPlaceOf(index, node, schema)) {
      const seen = state.get(next);
      if (seen === 'open') {
        const from = stack.findIndex((n) => n.schema === next);
        return { pointer: index.bySchema.get(next)?.pointer ?? '#', path: stack.slice(from).map((n) => n.pointer) };
      }
      const nextNode = index.bySchema.get(next);
      if (seen === undefined && nextNode !== undefined) {
        const found = search(nextNode);
        if (found !== null) return found;
      }
    }
    stack.pop();
    state.set(node.schema, 'done');
    return null;
  };
  for (const node of index.nodes) {
    if (state.has(node.schema)) continue;
    const found = search(node);
    if (found !== null) return found;
  }
  return null;
}

/**
 * Whether the schema's work on a value is at most about (schema size x value size): no
 * reference (which could make ajv walk a part of the schema many times per part of the
 * value) and no uniqueItems (which compares items pairwise). Keys anywhere are looked at,
 * so a property named `$ref` counts too: a false "no" only moves the work to a thread.
 */
export function isLinearSchema(schema: unknown): boolean {
  if (typeof schema === 'boolean') return true;
  const text = JSON.stringify(schema);
  return !/"\$(ref|dynamicRef|recursiveRef)"|"uniqueItems"/.test(text);
}
