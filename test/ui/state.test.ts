import { describe, expect, it } from 'vitest';
import {
  controlRanking,
  initialState,
  reduce,
  selectedIndex,
  selectedRow,
  visibleRows,
  type Action,
  type DashboardState,
} from '../../cli/ui/state.js';
import { makeSummary } from './make-summary.js';

const T0 = 1_700_000_000_000;
const run = (state: DashboardState, ...actions: Action[]): DashboardState => actions.reduce(reduce, state);
const receive = (events: ReturnType<typeof makeSummary>[], now = T0): Action => ({ type: 'events/received', events, now });

describe('events and the ring', () => {
  it('keeps at most capacity rows after 10,000 events, newest first, while totals count all', () => {
    let state = initialState({ capacity: 100 });
    for (let batch = 0; batch < 100; batch++) {
      state = reduce(state, receive(Array.from({ length: 100 }, (_, i) => makeSummary({ id: `b${batch}-${i}` }))));
    }
    expect(state.rows).toHaveLength(100);
    expect(state.totals.events).toBe(10_000);
    expect(visibleRows(state)[0]!.id).toBe('b99-99');
    expect(visibleRows(state)[99]!.id).toBe('b99-0');
  });

  it('keeps the newest rows when one batch is larger than the ring', () => {
    const events = Array.from({ length: 25 }, (_, i) => makeSummary({ id: `e${i}` }));
    const state = reduce(initialState({ capacity: 10 }), receive(events));
    expect(state.rows.map((r) => r.id)).toEqual(events.slice(15).map((e) => e.id));
  });

  it('counts totals by decision and matches per control', () => {
    const state = run(
      initialState(),
      receive([makeSummary({ decision: 'deny' }), makeSummary({ decision: 'deny' }), makeSummary({ decision: 'steer' }), makeSummary()]),
    );
    expect(state.totals).toEqual({ events: 4, allow: 1, deny: 2, steer: 1, ask: 0 });
    expect(controlRanking(state)).toEqual([
      { name: 'block-sql', matches: 2, deny: 2, steer: 0, shadow: 0 },
      { name: 'steer-pii', matches: 1, deny: 0, steer: 1, shadow: 0 },
    ]);
  });

  it('counts shadow matches apart: they never add to deny or steer', () => {
    const shadow = { control_id: 9, control_name: 'pii-shadow', action: 'deny' as const, message: null, steering_context: null, excerpt: null };
    const state = run(
      initialState(),
      receive([makeSummary({ shadow_matches: [shadow] }), makeSummary({ decision: 'deny', shadow_matches: [shadow] })]),
    );
    expect(state.totals).toEqual({ events: 2, allow: 1, deny: 1, steer: 0, ask: 0 });
    expect(controlRanking(state)).toEqual([
      { name: 'pii-shadow', matches: 0, deny: 0, steer: 0, shadow: 2 },
      { name: 'block-sql', matches: 1, deny: 1, steer: 0, shadow: 0 },
    ]);
  });

  it('reports events per second over whole seconds', () => {
    let state = initialState();
    for (let s = 0; s < 6; s++) state = reduce(state, receive(Array.from({ length: 200 }, () => makeSummary()), T0 + s * 1000));
    expect(state.rate.perSecond).toBe(200);
    state = reduce(state, { type: 'tick', now: T0 + 20_000 });
    expect(state.rate.perSecond).toBe(0);
  });
});

describe('pause', () => {
  it('holds events that arrive while paused, counts them and the totals, and shows them on resume in order', () => {
    let state = run(initialState(), receive([makeSummary({ id: 'before' })]), { type: 'pause/toggle' });
    state = run(state, receive([makeSummary({ id: 'p1', decision: 'deny' }), makeSummary({ id: 'p2' })]), receive([makeSummary({ id: 'p3' })]));
    expect(state.paused).toBe(true);
    expect(state.held).toHaveLength(3);
    expect(state.totals.events).toBe(4);
    expect(state.totals.deny).toBe(1);
    expect(state.rows.map((r) => r.id)).toEqual(['before']);
    state = run(state, { type: 'pause/toggle' }, receive([makeSummary({ id: 'after' })]));
    expect(state.held).toEqual([]);
    expect(state.rows.map((r) => r.id)).toEqual(['before', 'p1', 'p2', 'p3', 'after']);
  });

  it('holds at most the ring capacity while paused, the newest kept, and clear drops them', () => {
    let state = run(initialState({ capacity: 3 }), { type: 'pause/toggle' });
    state = run(state, receive(['a', 'b', 'c', 'd', 'e'].map((id) => makeSummary({ id }))));
    expect(state.held.map((r) => r.id)).toEqual(['c', 'd', 'e']);
    expect(state.totals.events).toBe(5);
    state = run(state, { type: 'clear' });
    expect(state.held).toEqual([]);
    state = run(state, receive([makeSummary({ id: 'f' })]), { type: 'pause/toggle' });
    expect(state.rows.map((r) => r.id)).toEqual(['f']);
  });
});

describe('filter', () => {
  const rows = [
    makeSummary({ id: 'a', agent_name: 'support-bot', step_name: 'run_sql', decision: 'deny' }),
    makeSummary({ id: 'b', agent_name: 'billing', step_name: 'send_email', decision: 'steer' }),
    makeSummary({ id: 'c', agent_name: 'support-bot', step_name: 'search', decision: 'allow' }),
  ];
  const cases: Array<[string, string[]]> = [
    ['agent=support-bot', ['c', 'a']],
    ['!agent=support-bot', ['b']],
    ['decision=deny', ['a']],
    ['!decision=allow', ['b', 'a']],
    ['control=~^block', ['a']],
    ['step=~mail', ['b']],
    ['stage=post', []],
    ['sql', ['a']],
    ['!sql', ['c', 'b']],
    ['agent=support-bot !decision=deny', ['c']],
    ['', ['c', 'b', 'a']],
  ];
  for (const [text, expected] of cases) {
    it(`"${text}" shows ${expected.join(',') || 'nothing'}`, () => {
      const state = run(initialState(), receive(rows), { type: 'filter/set', text });
      expect(state.filterError).toBeNull();
      expect(visibleRows(state).map((r) => r.id)).toEqual(expected);
    });
  }

  it('types into the draft, submits, and reopens with the current text', () => {
    let state = run(initialState(), receive(rows), { type: 'filter/open' });
    for (const ch of 'decision=denyX') state = reduce(state, { type: 'filter/input', text: ch });
    state = run(state, { type: 'filter/backspace' }, { type: 'filter/submit' });
    expect(state.filterDraft).toBeNull();
    expect(state.filter?.text).toBe('decision=deny');
    expect(reduce(state, { type: 'filter/open' }).filterDraft).toBe('decision=deny');
  });

  it('keeps the old filter and shows an error for a bad regular expression', () => {
    let state = run(initialState(), receive(rows), { type: 'filter/set', text: 'decision=deny' }, { type: 'filter/open' });
    state = run(state, { type: 'filter/input', text: '' });
    state = { ...state, filterDraft: 'step=~(unclosed' };
    state = reduce(state, { type: 'filter/submit' });
    expect(state.filterError).toMatch(/not a valid regular expression/);
    expect(state.filter?.text).toBe('decision=deny');
    expect(state.filterDraft).toBe('step=~(unclosed');
    expect(visibleRows(state).map((r) => r.id)).toEqual(['a']);
    state = reduce(state, { type: 'filter/cancel' });
    expect(state.filterError).toBeNull();
    expect(state.filter?.text).toBe('decision=deny');
  });

  describe('by session', () => {
    const inSessions = [
      makeSummary({ id: 's1', session_id: 'run-1', session_labels: ['untrusted_content'] }),
      makeSummary({ id: 's2', session_id: 'run-10' }),
      makeSummary({ id: 's3' }),
      makeSummary({ id: 's4', session_id: 'run-1', session_labels: [] }),
      // From an older server: no session fields at all.
      makeSummary({ id: 's5', session_id: undefined }),
    ];
    const shown = (text: string) => {
      const state = run(initialState(), receive(inSessions), { type: 'filter/set', text });
      expect(state.filterError).toBeNull();
      return visibleRows(state).map((r) => r.id);
    };
    it('session:ID follows exactly one session: no prefix match, no sessionless step', () => {
      expect(shown('session:run-1')).toEqual(['s4', 's1']);
      expect(shown('session=run-1')).toEqual(['s4', 's1']);
      expect(shown('session:run-')).toEqual([]);
      // A regex character in an id is a plain character here.
      expect(shown('session:run-.')).toEqual([]);
    });
    it('!session:ID shows every other step, sessionless ones included; session=~RE and a bare id work too', () => {
      expect(shown('!session:run-1')).toEqual(['s5', 's3', 's2']);
      expect(shown('session=~^run-1')).toEqual(['s4', 's2', 's1']);
      expect(shown('run-10')).toEqual(['s2']);
      expect(shown('session:run-1 decision=allow')).toEqual(['s4', 's1']);
    });
    it('refuses session: without an id', () => {
      expect(reduce(initialState(), { type: 'filter/set', text: 'session:' }).filterError).toMatch(/session id is needed/);
      expect(reduce(initialState(), { type: 'filter/set', text: '!session:' }).filterError).toMatch(/session id is needed/);
    });
  });

  it('rejects an empty exact value and a lone "!"', () => {
    expect(reduce(initialState(), { type: 'filter/set', text: 'agent=' }).filterError).toMatch(/a value is needed/);
    expect(reduce(initialState(), { type: 'filter/set', text: '!' }).filterError).toMatch(/nothing after/);
  });

  it('survives pause, clear and reconnects', () => {
    const state = run(
      initialState({ filter: 'decision=deny' }),
      { type: 'pause/toggle' },
      { type: 'connection/changed', state: { kind: 'reconnecting', attempt: 1, retryAt: T0, reason: 'x' } },
      { type: 'clear' },
      { type: 'connection/changed', state: { kind: 'live', since: T0 } },
      { type: 'pause/toggle' },
      receive(rows),
    );
    expect(state.filter?.text).toBe('decision=deny');
    expect(visibleRows(state).map((r) => r.id)).toEqual(['a']);
  });
});

describe('selection', () => {
  const five = Array.from({ length: 5 }, (_, i) => makeSummary({ id: `r${i}` }));

  it('follows the newest row until moved, then holds its row as new ones arrive', () => {
    let state = run(initialState(), receive(five));
    expect(selectedRow(state)?.id).toBe('r4');
    state = run(state, { type: 'select/move', delta: 2 });
    expect(selectedRow(state)?.id).toBe('r2');
    state = run(state, receive([makeSummary({ id: 'r5' })]));
    expect(selectedRow(state)?.id).toBe('r2');
    expect(selectedIndex(state)).toBe(3);
  });

  it('clamps at both ends', () => {
    let state = run(initialState(), receive(five), { type: 'select/move', delta: 99 });
    expect(selectedRow(state)?.id).toBe('r0');
    state = run(state, { type: 'select/move', delta: -99 });
    expect(state.selectedId).toBeNull();
    expect(selectedRow(state)?.id).toBe('r4');
  });

  it('falls back to the top when the held row leaves the ring, and to nothing after clear', () => {
    let state = run(initialState({ capacity: 5 }), receive(five), { type: 'select/move', delta: 4 });
    expect(selectedRow(state)?.id).toBe('r0');
    state = run(state, receive([makeSummary({ id: 'r5' })]));
    expect(selectedIndex(state)).toBe(0);
    state = run(state, { type: 'clear' });
    expect(selectedIndex(state)).toBe(-1);
    expect(selectedRow(state)).toBeNull();
    expect(run(state, { type: 'select/move', delta: 1 }).selectedId).toBeNull();
  });

  it('holds the row shown in the detail view', () => {
    let state = run(initialState(), receive(five), { type: 'view/detail' });
    expect(state.view).toBe('detail');
    state = run(state, receive([makeSummary({ id: 'r5' })]));
    expect(selectedRow(state)?.id).toBe('r4');
    expect(run(state, { type: 'view/back' }).view).toBe('table');
  });

  it('does not open details with no rows', () => {
    expect(reduce(initialState(), { type: 'view/detail' }).view).toBe('table');
  });
});

describe('clear and the rest', () => {
  it('clears rows and counts but keeps the filter and connection', () => {
    const state = run(
      initialState({ filter: 'sql' }),
      { type: 'connection/changed', state: { kind: 'live', since: T0 } },
      receive([makeSummary({ decision: 'deny' })]),
      { type: 'lagged', skipped: 7 },
      { type: 'clear' },
    );
    expect(state.rows).toEqual([]);
    expect(state.totals.events).toBe(0);
    expect(state.controls).toEqual({});
    expect(state.lagged).toBe(0);
    expect(state.filter?.text).toBe('sql');
    expect(state.connection.kind).toBe('live');
  });

  it('adds up lagged counts and toggles help', () => {
    const state = run(initialState(), { type: 'lagged', skipped: 3 }, { type: 'lagged', skipped: 4 }, { type: 'view/help' });
    expect(state.lagged).toBe(7);
    expect(state.view).toBe('help');
    expect(reduce(state, { type: 'view/help' }).view).toBe('table');
  });
});
