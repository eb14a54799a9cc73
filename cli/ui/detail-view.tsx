import { Box, Text } from 'ink';
import type { EvaluationSummary } from '../../src/model/stream.js';
import { fit, formatDuration, SHADOW_MARK } from './format.js';
import { useTint } from './palette.js';

interface Line {
  text: string;
  color?: string;
  bold?: boolean;
}

const actionColor = (action: string): string | undefined =>
  action === 'deny' ? 'red' : action === 'steer' ? 'yellow' : action === 'allow' ? 'green' : undefined;

/**
 * The step's session and its labels. The labels come with the stream's summary (the
 * evaluation result's, after this step's own): no request per opened detail, and an older
 * step shows the labels its session held then, not the ones it gained later.
 */
function sessionLine(summary: EvaluationSummary): Line {
  const id = summary.session_id;
  if (id === null || id === undefined) return { text: 'session none' };
  const labels = summary.session_labels;
  if (labels === null || labels === undefined) return { text: `session ${id}   labels not kept (no session-aware control)` };
  // An injected page, private data: the labels a person looks for first stand out.
  return { text: `session ${id}   labels ${labels.length === 0 ? 'none' : labels.join(', ')}`, color: labels.length > 0 ? 'magenta' : undefined };
}

/** The lines of the detail view, built as data so the layout can cut them to the screen. */
export function detailLines(summary: EvaluationSummary): Line[] {
  const lines: Line[] = [
    { text: `Evaluation ${summary.id}   ${summary.timestamp}   (enter/esc: back)`, bold: true },
    { text: `agent ${summary.agent_name}   step ${summary.step_name} (${summary.step_type}, ${summary.stage})` },
    { text: `took ${formatDuration(summary.duration_ms)}   ${summary.evaluated} controls evaluated   trace ${summary.trace_id}` },
    sessionLine(summary),
    { text: `decision ${summary.decision.toUpperCase()}`, color: actionColor(summary.decision), bold: true },
    { text: '' },
    { text: summary.matches.length === 0 ? 'No control matched.' : `Matched controls (${summary.matches.length}):`, bold: true },
  ];
  for (const match of summary.matches) {
    lines.push({ text: `  ${match.control_name}  [${match.action}]  #${match.control_id}`, color: actionColor(match.action), bold: true });
    if (match.message) lines.push({ text: `    message:  ${match.message}` });
    if (match.steering_context) {
      lines.push({ text: `    steering: ${match.steering_context.message}`, color: 'yellow' });
      for (const required of match.steering_context.required_actions ?? []) lines.push({ text: `      - ${required}`, color: 'yellow' });
    }
    if (match.excerpt !== null) lines.push({ text: `    data:     ${JSON.stringify(match.excerpt)}` });
  }
  if (summary.shadow_matches.length > 0) {
    lines.push({ text: '' }, { text: `Shadow matches (${summary.shadow_matches.length}): would have acted, took no part in the decision`, bold: true });
    for (const match of summary.shadow_matches) {
      lines.push({ text: `  ${SHADOW_MARK}${match.control_name}  [would ${match.action}]  #${match.control_id}`, color: 'magenta' });
      if (match.message) lines.push({ text: `    message:  ${match.message}` });
      if (match.excerpt !== null) lines.push({ text: `    data:     ${JSON.stringify(match.excerpt)}` });
    }
  }
  if (summary.errors.length > 0) {
    lines.push({ text: '' }, { text: `Evaluator errors (${summary.errors.length}):`, bold: true, color: 'red' });
    for (const error of summary.errors) lines.push({ text: `  ${error.control_name}: ${error.message}`, color: 'red' });
  }
  return lines;
}

export function DetailView(props: { summary: EvaluationSummary | null; width: number; height: number }) {
  const tint = useTint();
  const all = props.summary ? detailLines(props.summary) : [{ text: 'Nothing selected (enter/esc: back)' }];
  // Cut to the screen; the last line says how much did not fit rather than wrapping.
  const shown = all.length > props.height ? [...all.slice(0, Math.max(0, props.height - 1)), { text: `… ${all.length - props.height + 1} more lines` }] : all;
  return (
    <Box flexDirection="column" width={props.width} height={props.height}>
      {shown.map((line, i) => (
        <Text key={i} wrap="truncate" color={tint(line.color)} bold={line.bold}>
          {fit(line.text, props.width).trimEnd() || ' '}
        </Text>
      ))}
    </Box>
  );
}
