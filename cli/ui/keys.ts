/**
 * Keys to actions, as a pure function of the state, so the key map is tested without a
 * terminal. `quit` is not a reducer action: leaving is the component's job.
 */
import type { Action, DashboardState } from './state.js';

/** The subset of Ink's `Key` the dashboard reads. */
export interface KeyInfo {
  upArrow?: boolean;
  downArrow?: boolean;
  pageUp?: boolean;
  pageDown?: boolean;
  return?: boolean;
  escape?: boolean;
  backspace?: boolean;
  delete?: boolean;
  ctrl?: boolean;
  meta?: boolean;
  tab?: boolean;
}

export type KeyResult = Action | { type: 'quit' } | null;

export const HELP_LINES: Array<[string, string]> = [
  ['↑ ↓ / k j', 'select a row (the top row follows the newest event)'],
  ['g / esc', 'back to the top row'],
  ['PgUp PgDn', 'move ten rows'],
  ['enter', 'details of the selected evaluation; enter or esc goes back'],
  ['/', 'filter: agent=NAME control=~REGEX decision=deny step=NAME stage=pre, or a bare REGEX; ! inverts a term; empty clears'],
  ['p', 'pause the table (totals keep counting; what arrives meanwhile shows on resume)'],
  ['c', 'clear rows and counts'],
  ['a', 'the approvals pane: ↑↓ select, y approve, n deny (each asks y/n to confirm), a or esc leaves'],
  ['?', 'this help'],
  ['q', 'quit'],
];

export function keyToAction(state: DashboardState, input: string, key: KeyInfo): KeyResult {
  if (state.filterDraft !== null) {
    if (key.escape) return { type: 'filter/cancel' };
    if (key.return) return { type: 'filter/submit' };
    if (key.backspace || key.delete) return { type: 'filter/backspace' };
    if (key.ctrl || key.meta || key.tab || key.upArrow || key.downArrow || input === '') return null;
    return { type: 'filter/input', text: input };
  }
  if (input === 'q' || (key.ctrl && input === 'c')) return { type: 'quit' };
  const approvals = approvalKey(state, input, key);
  if (approvals !== undefined) return approvals;
  if (state.view === 'help') {
    return key.escape || key.return || input === '?' ? { type: 'view/back' } : null;
  }
  if (state.view === 'detail') {
    if (key.escape || key.return || key.backspace || key.delete) return { type: 'view/back' };
    if (input === '?') return { type: 'view/help' };
    if (input === 'p') return { type: 'pause/toggle' };
    return null;
  }
  if (key.upArrow || input === 'k') return { type: 'select/move', delta: -1 };
  if (key.downArrow || input === 'j') return { type: 'select/move', delta: 1 };
  if (key.pageUp) return { type: 'select/move', delta: -10 };
  if (key.pageDown) return { type: 'select/move', delta: 10 };
  if (key.return) return { type: 'view/detail' };
  if (key.escape) return { type: 'select/top' };
  switch (input) {
    case '/':
      return { type: 'filter/open' };
    case 'p':
      return { type: 'pause/toggle' };
    case 'c':
      return { type: 'clear' };
    case '?':
      return { type: 'view/help' };
    case 'g':
      return { type: 'select/top' };
    default:
      return null;
  }
}

/**
 * Keys of the approvals pane: a confirmation takes y (or enter) and n (or esc) before
 * anything else; in focus, the pane takes the moves and y/n. undefined: not its key.
 */
function approvalKey(state: DashboardState, input: string, key: KeyInfo): KeyResult | undefined {
  const { approvals } = state;
  if (approvals.confirm !== null) {
    if (input === 'y' || key.return) return { type: 'approvals/execute' };
    if (input === 'n' || key.escape) return { type: 'approvals/cancel' };
    return null;
  }
  if (approvals.focused) {
    if (key.upArrow || input === 'k') return { type: 'approvals/move', delta: -1 };
    if (key.downArrow || input === 'j') return { type: 'approvals/move', delta: 1 };
    if (input === 'y') return { type: 'approvals/ask', verb: 'approve' };
    if (input === 'n') return { type: 'approvals/ask', verb: 'deny' };
    if (input === 'a' || key.escape) return { type: 'approvals/focus' };
    return null;
  }
  if (input === 'a' && state.view === 'table') return { type: 'approvals/focus' };
  return undefined;
}

/**
 * Ink hands over a burst of plain text (a paste, tmux send-keys) as one input string;
 * split it back into single keys so `/decision=deny⏎` types, then submits.
 */
export function splitKeys(input: string, key: KeyInfo): Array<[string, KeyInfo]> {
  if ([...input].length <= 1 || key.ctrl || key.meta || input.startsWith('\u001B')) return [[input, key]];
  return [...input].map((ch): [string, KeyInfo] => {
    if (ch === '\r' || ch === '\n') return ['', { return: true }];
    if (ch === '\u007F' || ch === '\b') return ['', { backspace: true }];
    if (ch === '\t') return ['', { tab: true }];
    return [ch, {}];
  });
}
