/**
 * The dashboard screen. It owns no logic of its own: it feeds events through the
 * batcher into the reducer, turns keys into actions, and lays the views out to fit the
 * terminal exactly (fewer lines than the terminal has, so Ink never scrolls or clears).
 */
import { Box, useApp, useInput, useStdout } from 'ink';
import { useEffect, useMemo, useReducer, useRef, useState } from 'react';
import type { StreamState } from '../../src/client/event-stream.js';
import type { ApprovalNotice, EvaluationSummary, ReloadNotice } from '../../src/model/stream.js';
import type { ApprovalRecord } from '../../src/model/index.js';
import { ApprovalPane } from './approval-pane.js';
import type { ApprovalVerb } from './approvals-state.js';
import { EventBatcher } from './batcher.js';
import { ControlPane } from './control-pane.js';
import { DetailView } from './detail-view.js';
import { EventTable } from './event-table.js';
import { Footer } from './footer.js';
import { filterLine, Header } from './header.js';
import { HelpView } from './help-view.js';
import { keyToAction, splitKeys } from './keys.js';
import { ColorContext } from './palette.js';
import { LimitPane } from './limit-pane.js';
import { controlRanking, initialState, reduce, selectedIndex, selectedRow, visibleRows, type DashboardState, type LimitUse } from './state.js';

/** What a live source (the SSE client, or a test) pushes into the dashboard. */
export interface DashboardSink {
  evaluation(summary: EvaluationSummary): void;
  reload(notice: ReloadNotice): void;
  lagged(skipped: number): void;
  invalid(): void;
  connection(state: StreamState): void;
  /** Rate and budget use per key (polled); sources without it never call it. */
  limits?(limits: LimitUse[]): void;
  /** The pending approvals (polled) and the stream's approval events. */
  approvals?(approvals: ApprovalRecord[]): void;
  approval?(notice: ApprovalNotice): void;
}

/** Approves or denies; resolves with the line the pane shows (`approved apr_…`, or why not). */
export type ApprovalDecider = (verb: ApprovalVerb, id: string) => Promise<string>;

/** Starts delivering to the sink; returns how to stop. */
export type DashboardSource = (sink: DashboardSink) => () => void;

export interface DashboardProps {
  server: string;
  source: DashboardSource;
  initial?: DashboardState;
  /** Fixed size (tests); by default the terminal's, following resizes. */
  width?: number;
  height?: number;
  throttleMs?: number;
  /** What the server filters the stream by (--agent, --decision), in / filter terms, for the header. */
  serverFilter?: string;
  onQuit?: () => void;
  /** Colours (default on); NO_COLOR and --no-color turn them off. */
  color?: boolean;
  /** Decides approvals from the approvals pane; without it the pane only shows them. */
  decide?: ApprovalDecider;
}

const PANE_WIDTH = 32;
const PANE_SIDE_MIN_WIDTH = 100;

export function Dashboard(props: DashboardProps) {
  const [state, dispatch] = useReducer(reduce, props.initial ?? initialState());
  const size = useTerminalSize(props.width, props.height);
  const [now, setNow] = useState(() => Date.now());
  const { exit } = useApp();

  useEffect(() => {
    const batcher = new EventBatcher<EvaluationSummary>(
      (events) => dispatch({ type: 'events/received', events, now: Date.now() }),
      props.throttleMs ?? 50,
    );
    const stop = props.source({
      evaluation: (summary) => batcher.push(summary),
      reload: (notice) => dispatch({ type: 'reload/received', notice }),
      lagged: (skipped) => dispatch({ type: 'lagged', skipped }),
      invalid: () => dispatch({ type: 'invalid', count: 1 }),
      connection: (connection) => dispatch({ type: 'connection/changed', state: connection }),
      limits: (limits) => dispatch({ type: 'limits/received', limits }),
      approvals: (approvals) => dispatch({ type: 'approvals/received', approvals }),
      approval: (notice) => dispatch({ type: 'approvals/notice', notice }),
    });
    // Once a second: the rate window rolls and "reconnecting in Ns" counts down.
    const clock = setInterval(() => {
      const t = Date.now();
      setNow(t);
      dispatch({ type: 'tick', now: t });
    }, 1000);
    return () => {
      clearInterval(clock);
      batcher.stop();
      stop();
    };
  }, [props.source, props.throttleMs]);

  // Keys that arrive in one chunk (a paste, tmux send-keys) are handled before React
  // re-renders; advancing this copy keeps each key seeing the effect of the one before.
  const latest = useRef(state);
  latest.current = state;
  useInput((input, key) => {
    for (const [one, info] of splitKeys(input, key)) {
      const action = keyToAction(latest.current, one, info);
      if (!action) continue;
      if (action.type === 'quit') {
        props.onQuit?.();
        exit();
        return;
      }
      // The one side effect of a key: a confirmed decision goes to the server.
      const confirmed = action.type === 'approvals/execute' ? latest.current.approvals.confirm : null;
      if (confirmed !== null) {
        const decide = props.decide ?? (async () => 'deciding needs a server connection');
        void decide(confirmed.verb, confirmed.id).then((outcome) => dispatch({ type: 'approvals/done', id: confirmed.id, outcome }));
      }
      latest.current = reduce(latest.current, action);
      dispatch(action);
    }
  });

  const rows = useMemo(() => visibleRows(state), [state.rows, state.filter]);
  const width = Math.max(10, size.width);
  // One line short of the terminal: a full-height frame makes Ink clear the screen each time.
  const height = Math.max(5, size.height - 1);
  const headerHeight = filterLine(state, props.serverFilter) === null ? 2 : 3;
  const bodyHeight = height - headerHeight - 1;
  const ranking = controlRanking(state);
  const paneSide = width >= PANE_SIDE_MIN_WIDTH;
  const paneBelow = !paneSide && bodyHeight >= 14 ? Math.min(6, Math.max(2, ranking.length + 1)) : 0;
  const mainWidth = paneSide ? width - PANE_WIDTH - 3 : width;
  // Rate and budget use takes the lower part of the side pane (up to half of it) when there is any.
  const limitHeight = paneSide && state.limits.length > 0 ? Math.min(state.limits.length * 2 + 1, Math.floor(bodyHeight / 3)) : 0;
  // Pending approvals take the top of the side pane (up to a third of it) while there are any, or while it has the keys.
  const showApprovals = state.approvals.pending.length > 0 || state.approvals.focused || state.approvals.message !== null;
  const approvalHeight = paneSide && showApprovals ? Math.max(3, Math.min(state.approvals.pending.length + 2, Math.floor(bodyHeight / 3))) : 0;
  const mainHeight = bodyHeight - paneBelow - (!paneSide && showApprovals ? 3 : 0);

  let main;
  if (state.view === 'help') main = <HelpView width={mainWidth} height={mainHeight} />;
  else if (state.view === 'detail') main = <DetailView summary={selectedRow(state)} width={mainWidth} height={mainHeight} />;
  else {
    const empty = state.paused
      ? 'paused: press p to resume'
      : state.rows.length > 0
        ? 'no rows match the filter'
        : state.connection.kind === 'live'
          ? 'waiting for evaluations…'
          : 'not connected yet';
    main = <EventTable rows={rows} selected={selectedIndex(state, rows)} width={mainWidth} height={mainHeight} empty={empty} />;
  }

  return (
    <ColorContext.Provider value={props.color ?? true}>
      <Box flexDirection="column" width={width} height={height}>
        <Header server={props.server} serverFilter={props.serverFilter} state={state} now={now} width={width} />
        <Box flexDirection="row" height={mainHeight}>
          {main}
          {paneSide ? (
            <Box flexDirection="column" borderStyle="single" borderTop={false} borderBottom={false} borderRight={false} borderDimColor paddingLeft={1} marginLeft={1}>
              {approvalHeight > 0 ? <ApprovalPane approvals={state.approvals} width={PANE_WIDTH} height={approvalHeight} /> : null}
              <ControlPane controls={ranking} width={PANE_WIDTH} height={mainHeight - limitHeight - approvalHeight} />
              {limitHeight > 0 ? <LimitPane limits={state.limits} width={PANE_WIDTH} height={limitHeight} /> : null}
            </Box>
          ) : null}
        </Box>
        {!paneSide && showApprovals ? <ApprovalPane approvals={state.approvals} width={width} height={3} /> : null}
        {paneBelow > 0 ? <ControlPane controls={ranking} width={width} height={paneBelow} /> : null}
        <Footer state={state} width={width} />
      </Box>
    </ColorContext.Provider>
  );
}

function useTerminalSize(fixedWidth?: number, fixedHeight?: number): { width: number; height: number } {
  const { stdout } = useStdout();
  const read = () => ({ width: fixedWidth ?? stdout.columns ?? 80, height: fixedHeight ?? stdout.rows ?? 24 });
  const [size, setSize] = useState(read);
  useEffect(() => {
    if (fixedWidth !== undefined && fixedHeight !== undefined) return;
    const onResize = (): void => setSize(read());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout, fixedWidth, fixedHeight]);
  return size;
}
