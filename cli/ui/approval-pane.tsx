import { Box, Text } from 'ink';
import type { ApprovalsState } from './approvals-state.js';
import { selectedApproval } from './approvals-state.js';
import { fit } from './format.js';
import { useTint } from './palette.js';

/**
 * Pending approvals, the longest waiting first: agent, step and control. With the pane in
 * focus (`a`), the selected one is marked and `y`/`n` ask to approve or deny it; the last
 * line asks for the confirmation, or says what became of the last decision.
 */
export function ApprovalPane(props: { approvals: ApprovalsState; width: number; height: number }) {
  const { approvals, width } = props;
  const tint = useTint();
  const selected = selectedApproval(approvals)?.id;
  const footer = approvals.confirm
    ? `${approvals.confirm.verb} ${approvals.confirm.id.slice(0, 12)}…? y yes, n no`
    : (approvals.message ?? (approvals.focused ? 'y approve  n deny  a leave' : 'a: decide'));
  const rows = approvals.pending.slice(0, Math.max(0, props.height - 2));
  return (
    <Box flexDirection="column" width={width} height={props.height}>
      <Text wrap="truncate" bold underline color={tint(approvals.focused ? 'magenta' : undefined)}>
        {fit(`APPROVALS (${approvals.pending.length} pending)`, width)}
      </Text>
      {rows.map((a) => {
        const mark = approvals.focused && a.id === selected ? '›' : ' ';
        return (
          <Text key={a.id} wrap="truncate" inverse={approvals.focused && a.id === selected}>
            {fit(`${mark}${a.id.slice(4, 10)} ${a.agent_name} ${a.step_name} · ${a.control_name}`, width)}
          </Text>
        );
      })}
      <Text wrap="truncate" color={tint(approvals.confirm ? 'yellow' : undefined)} dimColor={approvals.confirm === null}>
        {fit(footer, width)}
      </Text>
    </Box>
  );
}
