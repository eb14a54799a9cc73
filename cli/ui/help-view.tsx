import { Box, Text } from 'ink';
import { fit } from './format.js';
import { HELP_LINES } from './keys.js';
import { useTint } from './palette.js';

const KEY_WIDTH = 12;

/** Each key's text, wrapped at word boundaries to the width left of the key column. */
export function helpRows(width: number): Array<{ key: string; text: string }> {
  const room = Math.max(10, width - KEY_WIDTH);
  return HELP_LINES.flatMap(([key, what]) => wrapWords(what, room).map((text, i) => ({ key: i === 0 ? key : '', text })));
}

function wrapWords(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  return [...lines, line];
}

export function HelpView(props: { width: number; height: number }) {
  const tint = useTint();
  const rows = helpRows(props.width).slice(0, Math.max(0, props.height - 1));
  return (
    <Box flexDirection="column" width={props.width} height={props.height}>
      <Text bold wrap="truncate">Keys (? or esc: back)</Text>
      {rows.map((row, i) => (
        <Text key={i} wrap="truncate">
          <Text color={tint('cyan')}>{fit(row.key, KEY_WIDTH)}</Text>
          {fit(row.text, Math.max(1, props.width - KEY_WIDTH)).trimEnd()}
        </Text>
      ))}
    </Box>
  );
}
