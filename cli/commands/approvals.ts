import { Option, type Command } from 'commander';
import { UserError } from '../../src/errors.js';
import { ApprovalStatusSchema, MAX_APPROVAL_REASON, type ApprovalRecord, type ApprovalStatus } from '../../src/model/index.js';
import { withExamples } from '../help.js';
import { addConnectionOptions, clientOf, connectionOf, formatOption, withServer, type ConnectionFlags } from '../options.js';
import { colors, shouldColor } from '../output/color.js';
import { renderApproval, renderApprovalList, renderApprovalsJson } from '../output/approvals.js';
import { parseLimit } from './history.js';

export interface ApprovalsOptions extends ConnectionFlags {
  format: 'text' | 'json';
  status?: ApprovalStatus;
  agent?: string;
  limit?: string;
  reason?: string;
}

/** What `guardctl approvals` was asked to do, parsed from its words and options (testable without running it). */
export type ApprovalsAction =
  | { kind: 'list'; status: ApprovalStatus | undefined; agent: string | undefined; limit: number }
  | { kind: 'show'; id: string }
  | { kind: 'approve' | 'deny'; id: string; reason: string | undefined };

export function approvalsActionOf(words: readonly string[], options: Pick<ApprovalsOptions, 'status' | 'agent' | 'limit' | 'reason'>): ApprovalsAction {
  const [verb = 'list', id, ...rest] = words;
  if (rest.length > 0) throw new UserError(`guardctl approvals ${verb} takes one approval id, not ${rest.length + 1}`, 'for example: guardctl approvals approve apr_0123...');
  if (options.reason !== undefined && options.reason.length > MAX_APPROVAL_REASON) {
    throw new UserError(`--reason is ${options.reason.length} characters; the limit is ${MAX_APPROVAL_REASON}`);
  }
  switch (verb) {
    case 'list':
      if (id !== undefined) throw new UserError('guardctl approvals list takes no id', 'to see one approval: guardctl approvals show <id>');
      return { kind: 'list', status: options.status, agent: options.agent, limit: parseLimit(options.limit ?? '20') };
    case 'show':
    case 'approve':
    case 'deny': {
      if (id === undefined) throw new UserError(`guardctl approvals ${verb} needs the approval's id`, 'list the pending ones with: guardctl approvals list --status pending');
      if (verb === 'show') return { kind: 'show', id };
      if (verb === 'deny' && options.reason === undefined) throw new UserError('a denial needs --reason: the agent is told why', `guardctl approvals deny ${id} --reason "..."`);
      return { kind: verb, id, reason: options.reason };
    }
    default:
      throw new UserError(`unknown approvals action "${verb}"`, 'use list, show <id>, approve <id> or deny <id> --reason "..."');
  }
}

export function registerApprovals(program: Command): void {
  const command = program
    .command('approvals')
    .description('Steps an ask control holds for a person: list them, show one, approve or deny it')
    .argument('[action]', 'list (default), show <id>, approve <id>, deny <id>')
    .argument('[id...]', 'the approval id')
    .addOption(new Option('--status <status>', 'list: only approvals with this status').choices([...ApprovalStatusSchema.options]))
    .option('--agent <name>', 'list: only this agent’s approvals')
    .option('--limit <n>', 'list: approvals to show at most', '20')
    .option('--reason <text>', 'approve or deny: why (the agent is told a denial’s reason)')
    .addOption(formatOption(['text', 'json']));
  addConnectionOptions(command).action(async (action: string | undefined, ids: string[], options: ApprovalsOptions) => {
    process.exitCode = await runApprovals(approvalsActionOf([action ?? 'list', ...ids], options), options);
  });
  withExamples(command, [
    ['what waits for a person', 'guardctl approvals list --status pending'],
    ['the step (masked), its control and its times', 'guardctl approvals show apr_3f9a1c2b...'],
    ['let exactly that step run, once (an admin or approver key)', 'guardctl approvals approve apr_3f9a1c2b... --reason "Q4 invoice"'],
    ['refuse it; the agent is told why', 'guardctl approvals deny apr_3f9a1c2b... --reason "over the budget"'],
  ]);
}

export async function runApprovals(action: ApprovalsAction, options: ApprovalsOptions): Promise<number> {
  const connection = connectionOf(options);
  const client = clientOf(connection);
  const shown: ApprovalRecord[] = await withServer(connection, async () => {
    switch (action.kind) {
      case 'list':
        return client.approvals.list({ status: action.status, agent_name: action.agent, limit: action.limit });
      case 'show':
        return [await client.approvals.get(action.id)];
      case 'approve':
        return [await client.approvals.approve(action.id, action.reason)];
      case 'deny':
        return [await client.approvals.deny(action.id, action.reason)];
    }
  });
  const c = colors(shouldColor(process.stdout));
  if (options.format === 'json') process.stdout.write(renderApprovalsJson(shown));
  else process.stdout.write(action.kind === 'list' ? renderApprovalList(shown, c) : renderApproval(shown[0]!, c));
  return 0;
}
