/**
 * All dashboard state, as one pure reducer. Components only draw it and turn keys into
 * actions, so every behaviour here is tested as a plain function (STYLE.md habit 8).
 *
 * Time never comes from a clock in here: actions that need it carry `now` (ms).
 */
import type { EvaluationSummary, ReloadNotice } from '../../src/model/stream.js';
import { initialApprovals, reduceApprovals, type ApprovalsAction, type ApprovalsState } from './approvals-state.js';
import type { StreamState } from '../../src/client/event-stream.js';
import { matchesFilter, parseFilter, type Filter } from './filter.js';

export const DEFAULT_CAPACITY = 1000;
/** Seconds of history behind the events-per-second figure. */
export const RATE_WINDOW_S = 5;

export type View = 'table' | 'detail' | 'help';

export interface ControlCount {
  name: string;
  /** Evaluations in which this control matched. */
  matches: number;
  /** Of those, the ones whose overall decision was deny or steer. */
  deny: number;
  steer: number;
  /** Matches as a shadow control: what it would have done, never part of a decision. */
  shadow: number;
}

export interface Totals {
  events: number;
  allow: number;
  deny: number;
  steer: number;
  /** Steps waiting for a person's approval (decision ask). */
  ask: number;
}

export interface RateState {
  /** Events per whole second, newest last; at most RATE_WINDOW_S + 1 entries. */
  buckets: Array<{ second: number; count: number }>;
  /** The second the first event arrived: the window is shorter until it has filled. */
  since: number | null;
  perSecond: number;
}

/** A rate or budget control's use for one key, as the server's stats report it (polled). */
export interface LimitUse {
  control_name: string;
  key: string;
  used: number;
  limit: number;
  ratio: number;
}

export interface DashboardState {
  capacity: number;
  /** The bounded ring of recent evaluations, oldest first, never longer than capacity. */
  rows: EvaluationSummary[];
  totals: Totals;
  controls: Record<string, ControlCount>;
  /** The held row; null follows the newest row (the top of the table). */
  selectedId: string | null;
  view: View;
  filter: Filter | null;
  /** The `/` input while it is open; null when closed. */
  filterDraft: string | null;
  filterError: string | null;
  paused: boolean;
  /** Events that arrived while paused, held for the table until resuming (the newest `capacity`). */
  held: EvaluationSummary[];
  /** How many arrived while paused (held or, past the capacity, only counted). */
  arrivedWhilePaused: number;
  /** Events the server dropped because this client fell behind (`event: lagged`). */
  lagged: number;
  invalid: number;
  connection: StreamState;
  lastReload: ReloadNotice | null;
  rate: RateState;
  /** Rate and budget controls' use per key, the most used first (docs/evaluators.md). */
  limits: LimitUse[];
  /** Pending approvals and the pane's selection and confirmation (approvals-state.ts). */
  approvals: ApprovalsState;
}

export type Action =
  | { type: 'events/received'; events: EvaluationSummary[]; now: number }
  | { type: 'tick'; now: number }
  | { type: 'connection/changed'; state: StreamState }
  | { type: 'reload/received'; notice: ReloadNotice }
  | { type: 'lagged'; skipped: number }
  | { type: 'invalid'; count: number }
  | { type: 'select/move'; delta: number }
  | { type: 'select/top' }
  | { type: 'view/detail' }
  | { type: 'view/help' }
  | { type: 'view/back' }
  | { type: 'pause/toggle' }
  | { type: 'clear' }
  | { type: 'filter/open' }
  | { type: 'filter/input'; text: string }
  | { type: 'filter/backspace' }
  | { type: 'filter/submit' }
  | { type: 'filter/cancel' }
  | { type: 'filter/set'; text: string }
  | { type: 'limits/received'; limits: LimitUse[] }
  | ApprovalsAction;

const emptyTotals = (): Totals => ({ events: 0, allow: 0, deny: 0, steer: 0, ask: 0 });
const emptyRate = (): RateState => ({ buckets: [], since: null, perSecond: 0 });

export function initialState(options: { capacity?: number; filter?: string } = {}): DashboardState {
  const base: DashboardState = {
    capacity: Math.max(1, options.capacity ?? DEFAULT_CAPACITY),
    rows: [],
    totals: emptyTotals(),
    controls: {},
    selectedId: null,
    view: 'table',
    filter: null,
    filterDraft: null,
    filterError: null,
    paused: false,
    held: [],
    arrivedWhilePaused: 0,
    lagged: 0,
    invalid: 0,
    connection: { kind: 'connecting', attempt: 0 },
    lastReload: null,
    rate: emptyRate(),
    limits: [],
    approvals: initialApprovals(),
  };
  return options.filter ? reduce(base, { type: 'filter/set', text: options.filter }) : base;
}

export function reduce(state: DashboardState, action: Action): DashboardState {
  switch (action.type) {
    case 'approvals/received':
    case 'approvals/notice':
    case 'approvals/focus':
    case 'approvals/move':
    case 'approvals/ask':
    case 'approvals/cancel':
    case 'approvals/execute':
    case 'approvals/done':
      return { ...state, approvals: reduceApprovals(state.approvals, action) };
    case 'limits/received':
      return { ...state, limits: action.limits };
    case 'events/received':
      return receive(state, action.events, action.now);
    case 'tick':
      return { ...state, rate: rollRate(state.rate, 0, action.now) };
    case 'connection/changed':
      return { ...state, connection: action.state };
    case 'reload/received':
      return { ...state, lastReload: action.notice };
    case 'lagged':
      return { ...state, lagged: state.lagged + action.skipped };
    case 'invalid':
      return { ...state, invalid: state.invalid + action.count };
    case 'select/move':
      return moveSelection(state, action.delta);
    case 'select/top':
      return { ...state, selectedId: null };
    case 'view/detail': {
      // Entering details holds the row, so new events cannot swap it underneath.
      const row = selectedRow(state);
      return row ? { ...state, view: 'detail', selectedId: row.id } : state;
    }
    case 'view/help':
      return { ...state, view: state.view === 'help' ? 'table' : 'help' };
    case 'view/back':
      return { ...state, view: 'table' };
    case 'pause/toggle':
      // Resuming adds what arrived meanwhile, in arrival order, as if it had never stopped.
      return state.paused
        ? { ...state, paused: false, rows: appendBounded(state.rows, state.held, state.capacity), held: [], arrivedWhilePaused: 0 }
        : { ...state, paused: true };
    case 'clear':
      return {
        ...state,
        rows: [],
        totals: emptyTotals(),
        controls: {},
        selectedId: null,
        view: state.view === 'detail' ? 'table' : state.view,
        held: [],
        arrivedWhilePaused: 0,
        lagged: 0,
        invalid: 0,
        rate: emptyRate(),
      };
    case 'filter/open':
      return { ...state, filterDraft: state.filter?.text ?? '', filterError: null };
    case 'filter/input':
      return state.filterDraft === null ? state : { ...state, filterDraft: state.filterDraft + action.text };
    case 'filter/backspace':
      return state.filterDraft === null ? state : { ...state, filterDraft: state.filterDraft.slice(0, -1) };
    case 'filter/cancel':
      return { ...state, filterDraft: null, filterError: null };
    case 'filter/submit':
      return state.filterDraft === null ? state : applyFilter(state, state.filterDraft);
    case 'filter/set':
      return applyFilter(state, action.text);
  }
}

function applyFilter(state: DashboardState, text: string): DashboardState {
  const parsed = parseFilter(text);
  // A bad pattern keeps the old filter and leaves the input open to fix it.
  if (!parsed.ok) return { ...state, filterError: parsed.error, filterDraft: text };
  return { ...state, filter: parsed.filter, filterDraft: null, filterError: null, selectedId: null };
}

function receive(state: DashboardState, events: EvaluationSummary[], now: number): DashboardState {
  if (events.length === 0) return { ...state, rate: rollRate(state.rate, 0, now) };
  const totals = { ...state.totals };
  const controls = { ...state.controls };
  for (const event of events) {
    totals.events++;
    totals[event.decision]++;
    for (const match of event.matches) {
      const prev = controls[match.control_name];
      const next: ControlCount = prev
        ? { ...prev, matches: prev.matches + 1 }
        : { name: match.control_name, matches: 1, deny: 0, steer: 0, shadow: 0 };
      if (event.decision === 'deny' && match.action === 'deny') next.deny++;
      if (event.decision === 'steer' && match.action === 'steer') next.steer++;
      controls[match.control_name] = next;
    }
    for (const match of event.shadow_matches) {
      const prev = controls[match.control_name];
      controls[match.control_name] = prev
        ? { ...prev, shadow: prev.shadow + 1 }
        : { name: match.control_name, matches: 0, deny: 0, steer: 0, shadow: 1 };
    }
  }
  const rate = rollRate(state.rate, events.length, now);
  if (state.paused) {
    return { ...state, totals, controls, rate, held: appendBounded(state.held, events, state.capacity), arrivedWhilePaused: state.arrivedWhilePaused + events.length };
  }
  return { ...state, totals, controls, rate, rows: appendBounded(state.rows, events, state.capacity) };
}

/** One copy per batch, never longer than capacity: a flood costs the same as a trickle. */
function appendBounded<T>(rows: T[], added: T[], capacity: number): T[] {
  if (added.length >= capacity) return added.slice(added.length - capacity);
  const keep = Math.min(rows.length, capacity - added.length);
  return rows.slice(rows.length - keep).concat(added);
}

function rollRate(rate: RateState, count: number, now: number): RateState {
  const second = Math.floor(now / 1000);
  const buckets = rate.buckets.filter((b) => b.second > second - RATE_WINDOW_S - 1);
  const last = buckets[buckets.length - 1];
  if (count > 0) {
    if (last && last.second === second) buckets[buckets.length - 1] = { second, count: last.count + count };
    else buckets.push({ second, count });
  }
  const since = rate.since ?? (count > 0 ? second : null);
  // Whole seconds only, so the figure does not jump with the position inside a second.
  const span = since === null ? 0 : Math.min(RATE_WINDOW_S, second - since);
  let perSecond: number;
  if (span === 0) {
    perSecond = buckets.find((b) => b.second === second)?.count ?? 0;
  } else {
    const done = buckets.filter((b) => b.second < second && b.second >= second - span);
    perSecond = Math.round(done.reduce((sum, b) => sum + b.count, 0) / span);
  }
  return { buckets, since, perSecond };
}

/** The rows the table shows: newest first, through the filter. */
export function visibleRows(state: DashboardState): EvaluationSummary[] {
  const out: EvaluationSummary[] = [];
  for (let i = state.rows.length - 1; i >= 0; i--) {
    const row = state.rows[i]!;
    if (matchesFilter(state.filter, row)) out.push(row);
  }
  return out;
}

/** Index of the selected row in `rows` (visibleRows); a held row that is gone falls back to the top. */
export function selectedIndex(state: DashboardState, rows: EvaluationSummary[] = visibleRows(state)): number {
  if (rows.length === 0) return -1;
  if (state.selectedId === null) return 0;
  const index = rows.findIndex((r) => r.id === state.selectedId);
  return index === -1 ? 0 : index;
}

export function selectedRow(state: DashboardState): EvaluationSummary | null {
  if (state.view === 'detail' && state.selectedId !== null) {
    // The detail view keeps showing its row even after it left the ring.
    const held = state.rows.find((r) => r.id === state.selectedId);
    if (held) return held;
  }
  const rows = visibleRows(state);
  return rows[selectedIndex(state, rows)] ?? null;
}

function moveSelection(state: DashboardState, delta: number): DashboardState {
  const rows = visibleRows(state);
  if (rows.length === 0) return { ...state, selectedId: null };
  const index = Math.min(rows.length - 1, Math.max(0, selectedIndex(state, rows) + delta));
  // Back at the top means following the newest row again.
  return { ...state, selectedId: index === 0 ? null : rows[index]!.id };
}

/**
 * The control a row is best described by: the one that decided, else the first match,
 * else the first shadow match (marked `shadow`: it did not take part in the decision).
 */
export function decidingControl(summary: EvaluationSummary): { name: string; more: number; shadow: boolean } | null {
  if (summary.matches.length === 0) {
    const first = summary.shadow_matches[0];
    return first ? { name: first.control_name, more: summary.shadow_matches.length - 1, shadow: true } : null;
  }
  const decider = summary.matches.find((m) => m.action === summary.decision) ?? summary.matches[0]!;
  return { name: decider.control_name, more: summary.matches.length - 1, shadow: false };
}

/** Per-control counts, most matched first (shadow matches count too). */
export function controlRanking(state: DashboardState): ControlCount[] {
  const total = (c: ControlCount) => c.matches + c.shadow;
  return Object.values(state.controls).sort((a, b) => total(b) - total(a) || a.name.localeCompare(b.name));
}
