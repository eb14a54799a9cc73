import { Text } from 'ink';
import { fit } from './format.js';
import { useTint } from './palette.js';
import type { DashboardState } from './state.js';

/** The bottom line: the filter input while it is open, otherwise the keys. */
export function Footer(props: { state: DashboardState; width: number }) {
  const { state, width } = props;
  const tint = useTint();
  if (state.filterDraft !== null) {
    const error = state.filterError ? `  ✖ ${state.filterError}` : '';
    return (
      <Text wrap="truncate">
        <Text color={tint('cyan')}>/{state.filterDraft}</Text>
        <Text inverse> </Text>
        <Text color={tint('red')}>{fit(error, Math.max(0, width - state.filterDraft.length - 2)).trimEnd()}</Text>
      </Text>
    );
  }
  const keys =
    state.view === 'detail'
      ? 'enter/esc back  p pause  ? help  q quit'
      : '↑↓ select  enter details  / filter  p pause  c clear  ? help  q quit';
  return (
    <Text wrap="truncate" dimColor>
      {fit(keys, width).trimEnd()}
    </Text>
  );
}
