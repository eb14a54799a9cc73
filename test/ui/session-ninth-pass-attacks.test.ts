/**
 * The dashboard's session filter and session ids holding spaces or quotes (issue #37,
 * ninth pass): `session:ID` must follow the session it names and no other.
 */
import { describe, expect, it } from 'vitest';
import { initialState, reduce, visibleRows, type DashboardState } from '../../cli/ui/state.js';
import { makeSummary } from './make-summary.js';

const T0 = 1_700_000_000_000;
const sessions = [
  makeSummary({ id: 'run', session_id: 'run' }),
  makeSummary({ id: 'run 1', session_id: 'run 1' }),
  makeSummary({ id: 'quoted', session_id: 'say "hi"' }),
  makeSummary({ id: 'spaced', session_id: ' run ' }),
];

function filtered(text: string): DashboardState {
  const received = reduce(initialState(), { type: 'events/received', events: sessions, now: T0 });
  return reduce(received, { type: 'filter/set', text });
}
const shown = (text: string) => {
  const state = filtered(text);
  expect(state.filterError).toBeNull();
  return visibleRows(state).map((r) => r.id);
};

describe('session:ID with spaces and quotes', () => {
  it('follows a session whose id holds spaces or quotes when the id is written as a JSON string, and no other session', () => {
    expect(shown('session:"run 1"')).toEqual(['run 1']);
    expect(shown('session:" run "')).toEqual(['spaced']);
    expect(shown('session:"say \\"hi\\""')).toEqual(['quoted']);
    expect(shown('!session:"run 1" session=~^run')).toEqual(['run']);
    expect(shown('session="run 1"')).toEqual(['run 1']);
    // Unquoted, as before.
    expect(shown('session:run')).toEqual(['run']);
  });

  it('refuses a quoted id without its closing quote', () => {
    expect(filtered('session:"run 1').filterError).toMatch(/closing quote/);
  });
});
