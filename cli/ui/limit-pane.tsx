import { Box, Text } from 'ink';
import { fit } from './format.js';
import { useTint } from './palette.js';
import type { LimitUse } from './state.js';

/**
 * Rate and budget controls: per control and key, the use against the limit, the most used
 * first (polled from the server's stats), grouped by control. At or over the limit is red,
 * past 80% yellow.
 */
export function LimitPane(props: { limits: LimitUse[]; width: number; height: number }) {
  const { width } = props;
  const tint = useTint();
  const useWidth = 13;
  const nameWidth = Math.max(1, width - useWidth - 1);
  // Each control once, its keys below it, indented: a pane is narrow.
  const lines: Array<{ id: string; control?: string; use?: LimitUse }> = [];
  let last: string | null = null;
  for (const l of props.limits) {
    if (l.control_name !== last) lines.push({ id: `c\u0000${l.control_name}`, control: (last = l.control_name) });
    lines.push({ id: `k\u0000${l.control_name}\u0000${l.key}`, use: l });
  }
  const shown = lines.slice(0, Math.max(0, props.height - 1));
  return (
    <Box flexDirection="column" width={width} height={props.height}>
      <Text wrap="truncate" bold underline>
        {fit('LIMIT / KEY', nameWidth)} {fit('USED', useWidth, 'right')}
      </Text>
      {shown.map((line) =>
        line.use === undefined ? (
          <Text key={line.id} wrap="truncate" bold>
            {fit(line.control ?? '', width)}
          </Text>
        ) : (
          <Text key={line.id} wrap="truncate" color={tint(line.use.ratio >= 1 ? 'red' : line.use.ratio >= 0.8 ? 'yellow' : undefined)}>
            {fit(`  ${line.use.key}`, nameWidth)} {fit(`${amount(line.use.used)}/${amount(line.use.limit)}`, useWidth, 'right')}
          </Text>
        ),
      )}
    </Box>
  );
}

function amount(n: number): string {
  if (Number.isInteger(n)) return n >= 100_000 ? `${Math.round(n / 1000)}k` : String(n);
  return n.toFixed(1);
}
