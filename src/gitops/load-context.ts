/**
 * PURE: where things are in one parsed YAML document, for the loader's diagnostics: the
 * document's context, a diagnostic at a field path, and `file:line:col` of a field.
 */
import type { Document, LineCounter } from 'yaml';
import type { Diagnostic } from './diagnostics.js';
import { hintFor } from './hints.js';
import { locateField, parseFieldPath, type Span } from './positions.js';

export interface SourceLocation {
  file: string;
  line: number;
  column: number;
}

/** What a parsed document knows about where its parts are. */
export interface DocContext {
  file: string;
  doc: Document;
  lineCounter: LineCounter;
}

export function diag(
  ctx: DocContext,
  severity: Diagnostic['severity'],
  path: ReadonlyArray<string | number>,
  atKey: boolean,
  code: string,
  message: string,
): Diagnostic {
  const span: Span = locateField(ctx.doc, ctx.lineCounter, path, atKey);
  return {
    severity,
    file: ctx.file,
    line: span.line,
    column: span.column,
    endLine: span.endLine,
    endColumn: span.endColumn,
    field: pathString(path),
    message,
    hint: hintFor(code, pathString(path)),
    code,
  };
}

export function pathString(path: ReadonlyArray<string | number>): string {
  let out = '';
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out === '' ? key : `.${key}`;
  return out;
}

export function where(ctx: DocContext, path: Array<string | number>): string {
  const span = locateField(ctx.doc, ctx.lineCounter, path);
  return `${ctx.file}:${span.line}:${span.column}`;
}

export function locatorOf(ctx: DocContext): (field: string, atKey?: boolean) => Span {
  return (field, atKey = false) => locateField(ctx.doc, ctx.lineCounter, parseFieldPath(field), atKey);
}

export function startOf(ctx: DocContext): SourceLocation {
  const span = locateField(ctx.doc, ctx.lineCounter, []);
  return { file: ctx.file, line: span.line, column: span.column };
}

export function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}
