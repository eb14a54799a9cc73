import { Box, Text } from 'ink';
import type { EvaluationSummary } from '../../src/model/stream.js';
import { cellText, fit, formatHeaderRow, layoutColumns } from './format.js';
import { useTint } from './palette.js';

const decisionColor: Record<EvaluationSummary['decision'], string> = { allow: 'green', deny: 'red', steer: 'yellow', ask: 'magenta' };

/**
 * The live table, newest first. It draws exactly `height` lines (header included) so
 * the screen never changes height and never scrolls.
 */
export function EventTable(props: { rows: EvaluationSummary[]; selected: number; width: number; height: number; empty: string }) {
  const tint = useTint();
  const columns = layoutColumns(props.width);
  const bodyHeight = Math.max(0, props.height - 1);
  // Scroll just enough to keep the selected row on screen.
  const offset = props.selected >= bodyHeight ? props.selected - bodyHeight + 1 : 0;
  const shown = props.rows.slice(offset, offset + bodyHeight);
  const decisionAt = columns.findIndex((c) => c.key === 'decision');
  const lines = shown.map((row, i) => {
    const selected = offset + i === props.selected;
    // Three text runs per row (before, decision, after): fewer nodes for Ink to lay out per frame.
    const cells = columns.map((c) => fit(cellText(row, c.key), c.width, c.align));
    const before = cells.slice(0, Math.max(0, decisionAt)).join(' ');
    const after = cells.slice(decisionAt + 1).join(' ');
    return (
      <Text key={row.id} wrap="truncate" inverse={selected}>
        {before ? `${before} ` : ''}
        <Text color={tint(decisionColor[row.decision])} bold={row.decision !== 'allow'}>
          {cells[decisionAt] ?? ''}
        </Text>
        {after ? ` ${after}` : ''}
      </Text>
    );
  });
  const filler = Math.max(0, bodyHeight - lines.length);
  return (
    <Box flexDirection="column" width={props.width} height={props.height}>
      <Text wrap="truncate" bold underline>
        {formatHeaderRow(columns)}
      </Text>
      {lines}
      {lines.length === 0 && bodyHeight > 0 ? <Text dimColor wrap="truncate">{fit(props.empty, props.width)}</Text> : null}
      {Array.from({ length: Math.max(0, filler - (lines.length === 0 && bodyHeight > 0 ? 1 : 0)) }, (_, i) => (
        <Text key={`pad-${i}`}> </Text>
      ))}
    </Box>
  );
}
