import { Box, Text } from 'ink';
import { fit, SHADOW_MARK } from './format.js';
import { useTint } from './palette.js';
import type { ControlCount } from './state.js';

/**
 * Matches per control since start (or the last clear), most matched first. A control
 * that only matched as a shadow control is marked and drawn dim: it blocked nothing.
 */
export function ControlPane(props: { controls: ControlCount[]; width: number; height: number }) {
  const { width } = props;
  const tint = useTint();
  const countWidth = 7;
  const nameWidth = Math.max(1, width - countWidth - 1);
  const body = Math.max(0, props.height - 1);
  const shown = props.controls.slice(0, body);
  const hidden = props.controls.length - shown.length;
  return (
    <Box flexDirection="column" width={width} height={props.height}>
      <Text wrap="truncate" bold underline>
        {fit('CONTROL', nameWidth)} {fit('MATCHES', countWidth, 'right')}
      </Text>
      {shown.map((c, i) => (
        <Text
          key={c.name}
          wrap="truncate"
          dimColor={c.matches === 0}
          color={tint(c.deny > 0 ? 'red' : c.steer > 0 ? 'yellow' : undefined)}
        >
          {i === shown.length - 1 && hidden > 0
            ? fit(`… ${hidden + 1} more`, width)
            : `${fit(c.matches === 0 ? `${SHADOW_MARK}${c.name}` : c.name, nameWidth)} ${fit(String(c.matches + c.shadow), countWidth, 'right')}`}
        </Text>
      ))}
      {props.controls.length === 0 && body > 0 ? <Text dimColor>{fit('no matches yet', width)}</Text> : null}
    </Box>
  );
}
