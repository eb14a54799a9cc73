/**
 * PURE: the keys a document may hold at a field path, read from the model's zod schemas
 * (the single source of truth), so an "unknown key" hint can name the right one.
 */
import { z } from 'zod';

/** Wrappers that do not change which keys an object accepts. */
function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (let i = 0; i < 32; i++) {
    if (current instanceof z.ZodOptional || current instanceof z.ZodNullable || current instanceof z.ZodDefault) {
      current = current.unwrap() as z.ZodType;
    } else if (current instanceof z.ZodLazy) {
      current = current.unwrap() as z.ZodType;
    } else if (current instanceof z.ZodPipe) {
      current = current.in as z.ZodType;
    } else {
      return current;
    }
  }
  return current;
}

/** Every schema the value at `path` may have to match (several below a union). */
function schemasAt(schema: z.ZodType, path: ReadonlyArray<string | number>): z.ZodType[] {
  const here = unwrap(schema);
  if (here instanceof z.ZodUnion) return (here.options as z.ZodType[]).flatMap((option) => schemasAt(option, path));
  if (path.length === 0) return [here];
  const [key, ...rest] = path;
  if (here instanceof z.ZodObject && typeof key === 'string') {
    const child = (here.shape as Record<string, z.ZodType | undefined>)[key];
    return child ? schemasAt(child, rest) : [];
  }
  if (here instanceof z.ZodArray && typeof key === 'number') return schemasAt(here.element as z.ZodType, rest);
  return [];
}

/**
 * The keys allowed in the object at `path` (for `scope.stagez`, the path is `['scope']`),
 * in schema order; empty when the path leads to no object the schema knows.
 */
export function allowedKeysAt(schema: z.ZodType, path: ReadonlyArray<string | number>): string[] {
  const keys = new Set<string>();
  for (const found of schemasAt(schema, path)) {
    if (found instanceof z.ZodObject) for (const key of Object.keys(found.shape)) keys.add(key);
  }
  return [...keys];
}
