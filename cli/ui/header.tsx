import { Box, Text } from 'ink';
import type { StreamState } from '../../src/client/event-stream.js';
import { describeConnection, fit } from './format.js';
import { useTint } from './palette.js';
import type { DashboardState } from './state.js';

const connectionColor = (state: StreamState): string => {
  switch (state.kind) {
    case 'live':
      return 'green';
    case 'connecting':
    case 'reconnecting':
      return 'yellow';
    case 'unauthorized':
    case 'error':
    case 'closed':
      return 'red';
  }
};

/** The filters line: the / filter, then what the server filters (--agent, --decision); null when none. */
export function filterLine(state: DashboardState, serverFilter: string | undefined): string | null {
  const parts: string[] = [];
  if (state.filter) parts.push(`filter: ${state.filter.text}`);
  if (serverFilter) parts.push(`from the server: ${serverFilter}`);
  return parts.length > 0 ? parts.join('  ·  ') : null;
}

/**
 * Where and how we are connected; the totals and what else hides rows; then, when any is
 * set, the filters (headerHeight says how many lines).
 */
export function Header(props: { server: string; serverFilter?: string | undefined; state: DashboardState; now: number; width: number }) {
  const { state, width } = props;
  const tint = useTint();
  const connection = describeConnection(state.connection, props.now);
  const rate = `${state.rate.perSecond} ev/s`;
  const first = `guardctl ${props.server}`;
  const totals = state.totals;
  const notes: string[] = [];
  const filters = filterLine(state, props.serverFilter);
  if (state.lagged > 0) notes.push(`server skipped ${state.lagged}`);
  if (state.invalid > 0) notes.push(`${state.invalid} unreadable`);
  if (state.lastReload) {
    notes.push(state.lastReload.result === 'success' ? `reloaded ${state.lastReload.revision ?? ''}`.trim() : 'reload FAILED');
  }
  return (
    <Box flexDirection="column" width={width}>
      <Text wrap="truncate">
        <Text bold>{first}</Text>
        <Text>{'  '}</Text>
        <Text color={tint(connectionColor(state.connection))}>● {connection}</Text>
        <Text>{'  '}</Text>
        <Text>{rate}</Text>
        {state.paused ? <Text color={tint('yellow')} inverse>{` PAUSED ${state.arrivedWhilePaused} new `}</Text> : null}
      </Text>
      <Text wrap="truncate">
        <Text>total {totals.events}  </Text>
        <Text color={tint('green')}>allow {totals.allow}</Text>
        <Text>  </Text>
        <Text color={tint('red')}>deny {totals.deny}</Text>
        <Text>  </Text>
        <Text color={tint('yellow')}>steer {totals.steer}</Text>
        {totals.ask > 0 ? <Text color={tint('magenta')}>{`  ask ${totals.ask}`}</Text> : null}
        <Text dimColor>{notes.length > 0 ? fit(`   ${notes.join('  ·  ')}`, Math.max(0, width - 40)).trimEnd() : ''}</Text>
      </Text>
      {filters ? (
        <Text wrap="truncate" color={tint('cyan')}>
          {fit(filters, width).trimEnd()}
        </Text>
      ) : null}
    </Box>
  );
}
