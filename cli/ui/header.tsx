import { Box, Text } from 'ink';
import type { StreamState } from '../../src/client/event-stream.js';
import { describeConnection, fit } from './format.js';
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

/** Two lines: where and how we are connected, then the totals and what is hiding rows. */
export function Header(props: { server: string; state: DashboardState; now: number; width: number }) {
  const { state, width } = props;
  const connection = describeConnection(state.connection, props.now);
  const rate = `${state.rate.perSecond} ev/s`;
  const first = `guardctl ${props.server}`;
  const totals = state.totals;
  const notes: string[] = [];
  if (state.filter) notes.push(`filter: ${state.filter.text}`);
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
        <Text color={connectionColor(state.connection)}>● {connection}</Text>
        <Text>{'  '}</Text>
        <Text>{rate}</Text>
        {state.paused ? <Text color="yellow" inverse>{` PAUSED ${state.missed} missed `}</Text> : null}
      </Text>
      <Text wrap="truncate">
        <Text>total {totals.events}  </Text>
        <Text color="green">allow {totals.allow}</Text>
        <Text>  </Text>
        <Text color="red">deny {totals.deny}</Text>
        <Text>  </Text>
        <Text color="yellow">steer {totals.steer}</Text>
        <Text dimColor>{notes.length > 0 ? fit(`   ${notes.join('  ·  ')}`, Math.max(0, width - 40)).trimEnd() : ''}</Text>
      </Text>
    </Box>
  );
}
