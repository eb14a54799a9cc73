import { describe, expect, it } from 'vitest';
import { fit, formatPlainLine, formatRow, layoutColumns } from '../../cli/ui/format.js';
import { keyToAction, splitKeys } from '../../cli/ui/keys.js';
import { initialState, reduce } from '../../cli/ui/state.js';
import { makeSummary } from './make-summary.js';

describe('layoutColumns', () => {
  it('shows every column on a wide terminal and fills the width exactly', () => {
    const columns = layoutColumns(120);
    expect(columns.map((c) => c.key)).toEqual(['time', 'agent', 'step', 'stage', 'decision', 'control', 'duration']);
    expect(formatRow(makeSummary({ decision: 'deny' }), columns)).toHaveLength(120);
  });

  it('drops columns in priority order as the terminal narrows, keeping decision last', () => {
    expect(layoutColumns(60).map((c) => c.key)).toEqual(['time', 'agent', 'step', 'decision', 'control', 'duration']);
    expect(layoutColumns(50).map((c) => c.key)).toEqual(['time', 'agent', 'step', 'decision', 'control']);
    expect(layoutColumns(40).map((c) => c.key)).toEqual(['agent', 'step', 'decision', 'control']);
    expect(layoutColumns(20).map((c) => c.key)).toEqual(['agent', 'decision']);
    expect(layoutColumns(5).map((c) => c.key)).toEqual(['decision']);
  });

  it('never makes a row wider than the terminal', () => {
    const long = makeSummary({ agent_name: 'a'.repeat(80), step_name: 's'.repeat(80), decision: 'steer' });
    for (const width of [5, 12, 20, 33, 47, 60, 80, 99, 140]) {
      expect(formatRow(long, layoutColumns(width)).length).toBeLessThanOrEqual(width);
    }
  });
});

describe('fit and plain lines', () => {
  it('cuts with an ellipsis, pads, and removes newlines', () => {
    expect(fit('abcdef', 4)).toBe('abc…');
    expect(fit('ab', 4, 'right')).toBe('  ab');
    expect(fit('a\nb', 3)).toBe('a b');
  });

  it('prints seven space-separated fields, quoting names with spaces', () => {
    const line = formatPlainLine(
      makeSummary({
        decision: 'deny',
        matches: [
          { control_id: 1, control_name: 'no drop', action: 'deny', message: null, steering_context: null, excerpt: null },
          { control_id: 2, control_name: 'log-all', action: 'log', message: null, steering_context: null, excerpt: null },
        ],
      }),
    );
    expect(line).toBe('2025-01-02T03:04:05.678Z support-bot run_sql pre deny "no drop",+1 0.42ms');
    expect(formatPlainLine(makeSummary())).toMatch(/ allow - 0\.42ms$/);
  });

  it('names a shadow control with its mark when nothing enforced matched', () => {
    const shadow = { control_id: 3, control_name: 'pii-shadow', action: 'deny' as const, message: null, steering_context: null, excerpt: null };
    expect(formatPlainLine(makeSummary({ shadow_matches: [shadow] }))).toMatch(/ allow shadow:pii-shadow 0\.42ms$/);
    // An enforced match describes the row; the shadow one stays in the details.
    expect(formatPlainLine(makeSummary({ decision: 'deny', shadow_matches: [shadow] }))).toMatch(/ deny block-sql 0\.42ms$/);
  });
});

describe('keyToAction', () => {
  const state = initialState();
  it('maps the table keys', () => {
    expect(keyToAction(state, '', { upArrow: true })).toEqual({ type: 'select/move', delta: -1 });
    expect(keyToAction(state, '', { downArrow: true })).toEqual({ type: 'select/move', delta: 1 });
    expect(keyToAction(state, '', { return: true })).toEqual({ type: 'view/detail' });
    expect(keyToAction(state, '/', {})).toEqual({ type: 'filter/open' });
    expect(keyToAction(state, 'p', {})).toEqual({ type: 'pause/toggle' });
    expect(keyToAction(state, 'c', {})).toEqual({ type: 'clear' });
    expect(keyToAction(state, '?', {})).toEqual({ type: 'view/help' });
    expect(keyToAction(state, 'q', {})).toEqual({ type: 'quit' });
    expect(keyToAction(state, 'x', {})).toBeNull();
  });

  it('sends every printable key to the filter input while it is open, q included', () => {
    const open = reduce(state, { type: 'filter/open' });
    expect(keyToAction(open, 'q', {})).toEqual({ type: 'filter/input', text: 'q' });
    expect(keyToAction(open, '', { backspace: true })).toEqual({ type: 'filter/backspace' });
    expect(keyToAction(open, '', { escape: true })).toEqual({ type: 'filter/cancel' });
    expect(keyToAction(open, '', { return: true })).toEqual({ type: 'filter/submit' });
  });
});

describe('splitKeys', () => {
  it('splits a burst of typed text into single keys, Enter and Backspace included', () => {
    expect(splitKeys('/a\u007Fb\r', {})).toEqual([['/', {}], ['a', {}], ['', { backspace: true }], ['b', {}], ['', { return: true }]]);
    expect(splitKeys('q', {})).toEqual([['q', {}]]);
    expect(splitKeys('', { upArrow: true })).toEqual([['', { upArrow: true }]]);
  });
});
