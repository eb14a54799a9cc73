/**
 * PURE: how far a YAML document's aliases would expand it, measured on the parsed nodes
 * before anything is expanded. The yaml package's maxAliasCount bounds aliases of aliases
 * but not many aliases of one large anchor (99 aliases of a 50,000-item list: 5 million
 * values from a 450 KB file), so the loader bounds the nodes aliases add in total.
 */
import { isAlias, isMap, isScalar, isSeq, type Alias, type Document, type Node } from 'yaml';

/** Nodes that all of a document's aliases together may add when expanded. */
export const MAX_ALIAS_EXPANSION = 100_000;

export interface AliasOverflow {
  /** The alias at which the added nodes pass the bound: its offsets in the text. */
  range: [number, number];
  /** Nodes added up to and including that alias (Infinity for an alias inside its own anchor). */
  added: number;
}

/** The first alias (in text order) at which the expansion passes the bound, or null. */
export function aliasOverflow(doc: Document, limit = MAX_ALIAS_EXPANSION): AliasOverflow | null {
  const sizes = new Map<Node, number>();
  const open = new Set<Node>();
  // Expanded size of a node: itself plus its children, an alias counting as what it stands for.
  const sizeOf = (node: unknown): number => {
    if (isAlias(node)) {
      const target = node.resolve(doc);
      if (!target) return 1;
      if (open.has(target)) return Infinity; // an alias inside its own anchor never ends
      return sizeOf(target);
    }
    if (!isMap(node) && !isSeq(node)) return 1;
    const known = sizes.get(node);
    if (known !== undefined) return known;
    open.add(node);
    let size = 1;
    for (const item of node.items as unknown[]) {
      if (isMap(node)) {
        const pair = item as { key: unknown; value: unknown };
        size += sizeOf(pair.key) + sizeOf(pair.value);
      } else size += sizeOf(item);
    }
    open.delete(node);
    sizes.set(node, size);
    return size;
  };
  let added = 0;
  let found: AliasOverflow | null = null;
  const walk = (node: unknown): void => {
    if (found) return;
    if (isAlias(node)) {
      added += sizeOf(node) - 1;
      if (added > limit) found = { range: rangeOf(node), added };
      return;
    }
    if (isScalar(node) || (!isMap(node) && !isSeq(node))) return;
    for (const item of node.items as unknown[]) {
      if (isMap(node)) {
        const pair = item as { key: unknown; value: unknown };
        walk(pair.key);
        walk(pair.value);
      } else walk(item);
    }
  };
  walk(doc.contents);
  return found;
}

function rangeOf(alias: Alias): [number, number] {
  const range = alias.range;
  return range ? [range[0], range[1]] : [0, 0];
}
