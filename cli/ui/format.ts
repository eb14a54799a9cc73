/**
 * Text for cells and lines: fixed-width, truncated, never wrapping. Shared by the Ink
 * table and the plain (non-TTY) output so both say the same thing.
 */
import type { EvaluationSummary } from '../../src/model/stream.js';
import type { StreamState } from '../../src/client/event-stream.js';
import { decidingControl } from './state.js';

export type ColumnKey = 'time' | 'agent' | 'step' | 'stage' | 'decision' | 'control' | 'duration';

interface ColumnSpec {
  key: ColumnKey;
  title: string;
  min: number;
  /** Extra width a flexible column may take beyond `min`. */
  grow: number;
  /** Lower drops first when the terminal is narrow. */
  keep: number;
  align?: 'right';
}

const SPECS: ColumnSpec[] = [
  { key: 'time', title: 'TIME', min: 12, grow: 0, keep: 3 },
  { key: 'agent', title: 'AGENT', min: 8, grow: 14, keep: 6 },
  { key: 'step', title: 'STEP', min: 8, grow: 18, keep: 5 },
  { key: 'stage', title: 'STAGE', min: 5, grow: 0, keep: 1 },
  { key: 'decision', title: 'DECISION', min: 8, grow: 0, keep: 7 },
  { key: 'control', title: 'CONTROL', min: 8, grow: 40, keep: 4 },
  { key: 'duration', title: 'DURATION', min: 8, grow: 0, keep: 2, align: 'right' },
];

export interface Column {
  key: ColumnKey;
  title: string;
  width: number;
  align?: 'right';
}

const GAP = 1;

/**
 * Columns for a table `width` characters wide: drop the least important until the
 * minimum widths fit, then share what is left among the flexible ones.
 */
export function layoutColumns(width: number): Column[] {
  let specs = [...SPECS];
  const need = (list: ColumnSpec[]): number => list.reduce((s, c) => s + c.min, 0) + GAP * Math.max(0, list.length - 1);
  while (specs.length > 1 && need(specs) > width) {
    const weakest = specs.reduce((a, b) => (b.keep < a.keep ? b : a));
    specs = specs.filter((s) => s !== weakest);
  }
  let spare = Math.max(0, width - need(specs));
  const widths = new Map(specs.map((s) => [s.key, s.min]));
  // Hand out spare width one character at a time so flexible columns grow together.
  while (spare > 0) {
    let grew = false;
    for (const s of specs) {
      if (spare > 0 && widths.get(s.key)! < s.min + s.grow) {
        widths.set(s.key, widths.get(s.key)! + 1);
        spare--;
        grew = true;
      }
    }
    if (!grew) break;
  }
  const only = specs.length === 1 ? Math.max(1, width) : null;
  return specs.map((s) => ({ key: s.key, title: s.title, width: only ?? widths.get(s.key)!, ...(s.align ? { align: s.align } : {}) }));
}

/** Cuts to `width` with an ellipsis and pads, so a cell never spills into the next. */
export function fit(text: string, width: number, align?: 'right'): string {
  if (width <= 0) return '';
  const clean = text.replace(/[\r\n\t]/g, ' ');
  const cut = clean.length > width ? (width === 1 ? '…' : `${clean.slice(0, width - 1)}…`) : clean;
  return align === 'right' ? cut.padStart(width) : cut.padEnd(width);
}

export function formatTime(timestamp: string): string {
  const date = new Date(timestamp);
  if (Number.isNaN(date.getTime())) return timestamp.slice(0, 12);
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

export function formatDuration(ms: number): string {
  if (ms < 10) return `${ms.toFixed(2)}ms`;
  if (ms < 1000) return `${ms.toFixed(1)}ms`;
  return `${(ms / 1000).toFixed(2)}s`;
}

/** Marks a shadow control wherever the dashboard names one: it would have acted, it did not. */
export const SHADOW_MARK = 'shadow:';

export function controlLabel(summary: EvaluationSummary): string {
  const control = decidingControl(summary);
  if (!control) return '-';
  const name = control.shadow ? `${SHADOW_MARK}${control.name}` : control.name;
  return control.more > 0 ? `${name} +${control.more}` : name;
}

export function cellText(summary: EvaluationSummary, key: ColumnKey): string {
  switch (key) {
    case 'time':
      return formatTime(summary.timestamp);
    case 'agent':
      return summary.agent_name;
    case 'step':
      return summary.step_name;
    case 'stage':
      return summary.stage;
    case 'decision':
      return summary.decision;
    case 'control':
      return controlLabel(summary);
    case 'duration':
      return formatDuration(summary.duration_ms);
  }
}

export function formatRow(summary: EvaluationSummary, columns: Column[]): string {
  return columns.map((c) => fit(cellText(summary, c.key), c.width, c.align)).join(' '.repeat(GAP));
}

export function formatHeaderRow(columns: Column[]): string {
  return columns.map((c) => fit(c.title, c.width, c.align)).join(' '.repeat(GAP));
}

/** The connection state in a few words; `now` turns a retry time into "in 3s". */
export function describeConnection(state: StreamState, now: number): string {
  switch (state.kind) {
    case 'connecting':
      return state.attempt > 0 ? `connecting (attempt ${state.attempt + 1})` : 'connecting';
    case 'live':
      return 'live';
    case 'reconnecting': {
      const seconds = Math.max(0, Math.ceil((state.retryAt - now) / 1000));
      return `reconnecting in ${seconds}s (${state.reason})`;
    }
    case 'unauthorized':
      return `unauthorized: ${state.message}`;
    case 'error':
      return `error: ${state.message}`;
    case 'closed':
      return 'closed';
  }
}

/** One log line per event for pipes and CI logs: TIME AGENT STEP STAGE DECISION CONTROL DURATION. */
export function formatPlainLine(summary: EvaluationSummary): string {
  const decider = decidingControl(summary);
  const control = decider
    ? `${decider.shadow ? SHADOW_MARK : ''}${word(decider.name)}${decider.more > 0 ? `,+${decider.more}` : ''}`
    : '-';
  return [
    summary.timestamp,
    word(summary.agent_name),
    word(summary.step_name),
    summary.stage,
    summary.decision,
    control,
    formatDuration(summary.duration_ms),
  ].join(' ');
}

/** Names may hold spaces; quote those so every line still splits into seven fields. */
function word(text: string): string {
  return /[\s"]/.test(text) || text === '' ? JSON.stringify(text) : text;
}
