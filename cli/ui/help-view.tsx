import { Box, Text } from 'ink';
import { fit } from './format.js';
import { HELP_LINES } from './keys.js';

export function HelpView(props: { width: number; height: number }) {
  const keyWidth = 12;
  return (
    <Box flexDirection="column" width={props.width} height={props.height}>
      <Text bold wrap="truncate">Keys (? or esc: back)</Text>
      {HELP_LINES.slice(0, Math.max(0, props.height - 1)).map(([key, what]) => (
        <Text key={key} wrap="truncate">
          <Text color="cyan">{fit(key, keyWidth)}</Text>
          {fit(what, Math.max(1, props.width - keyWidth)).trimEnd()}
        </Text>
      ))}
    </Box>
  );
}
