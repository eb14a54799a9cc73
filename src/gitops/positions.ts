/**
 * Maps field paths (as zod and the engine report them) back to places in the YAML text,
 * so every diagnostic can name the line and column of the exact key or value.
 */
import { isMap, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';

export interface Span {
  line: number;
  column: number;
  endLine: number;
  endColumn: number;
}

/** `condition.and[1].evaluator.config.pattern` -> ['condition', 'and', 1, 'evaluator', 'config', 'pattern']. */
export function parseFieldPath(field: string): Array<string | number> {
  const out: Array<string | number> = [];
  const re = /([^.[\]]+)|\[(\d+)\]/g;
  for (const m of field.matchAll(re)) {
    if (m[2] !== undefined) out.push(Number(m[2]));
    else if (m[1] !== undefined) out.push(m[1]);
  }
  return out;
}

export function spanOfOffsets(lineCounter: LineCounter, start: number, end: number): Span {
  const a = lineCounter.linePos(start);
  const b = lineCounter.linePos(Math.max(start, end));
  return { line: a.line, column: a.col, endLine: b.line, endColumn: b.col };
}

function rangeOf(node: Node | null | undefined): [number, number] | null {
  const r = node?.range;
  return r ? [r[0], r[1]] : null;
}

/**
 * The span of the node at `path`. With `atKey`, the key of the last segment (unknown keys).
 * When the path runs out (a missing field), the span of the deepest key found, so "field
 * missing" points at the mapping that lacks it.
 */
export function locateField(
  doc: Document,
  lineCounter: LineCounter,
  path: ReadonlyArray<string | number>,
  atKey = false,
): Span {
  let node: unknown = doc.contents;
  let best: [number, number] | null = rangeOf(doc.contents);
  // For the root, the first key reads better than the whole document.
  if (isMap(doc.contents) && doc.contents.items[0]) {
    best = rangeOf(doc.contents.items[0].key as Node) ?? best;
  }
  for (let i = 0; i < path.length; i++) {
    const segment = path[i];
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      const keyRange = rangeOf(pair.key as Node);
      if (last && atKey) {
        best = keyRange ?? best;
        break;
      }
      // Collections point at their key ("scope:" is easier to find than its first entry).
      const valueIsScalar = isScalar(pair.value);
      best = (valueIsScalar ? rangeOf(pair.value as Node) : null) ?? keyRange ?? best;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment] as Node | undefined;
      if (!item) break;
      best = rangeOf(item) ?? best;
      node = item;
    } else {
      break;
    }
  }
  if (!best) return { line: 1, column: 1, endLine: 1, endColumn: 1 };
  return spanOfOffsets(lineCounter, best[0], best[1]);
}
