/** Starts the interactive dashboard on the terminal and resolves when the user quits. */
import { render } from 'ink';
import { followEventStream, type EventStreamOptions, type StreamState } from '../../src/client/event-stream.js';
import { GuardClient } from '../../src/client/index.js';
import { Dashboard, type ApprovalDecider, type DashboardSource } from './app.js';
import { initialState } from './state.js';

/** How often the dashboard reads rate and budget use from the server. */
const LIMITS_POLL_MS = 3000;

export interface InteractiveOptions extends EventStreamOptions {
  filter?: string;
  capacity?: number;
}

export async function runInteractive(options: InteractiveOptions): Promise<StreamState> {
  let final: StreamState = { kind: 'closed' };
  const source: DashboardSource = (sink) => {
    const controller = new AbortController();
    void followEventStream(
      { ...options, signal: controller.signal },
      {
        onEvaluation: (summary) => sink.evaluation(summary),
        onReload: (notice) => sink.reload(notice),
        onApproval: (notice) => sink.approval?.(notice),
        onLagged: (skipped) => sink.lagged(skipped),
        onInvalid: () => sink.invalid(),
        onState: (state) => {
          if (state.kind !== 'closed') final = state;
          sink.connection(state);
        },
      },
    );
    // Rate and budget use is read from the stats every few seconds (it is not an event).
    const client = new GuardClient({ serverUrl: options.server, ...(options.apiKey ? { apiKey: options.apiKey } : {}), timeoutMs: 5000 });
    const poll = () =>
      void client
        .stats({ time_range: '1m' })
        .then((stats) => sink.limits?.((stats.counters ?? []).map(({ control_name, key, used, limit, ratio }) => ({ control_name, key, used, limit, ratio }))))
        .catch(() => undefined);
    // Pending approvals too: the stream tells what changes, the poll what was there before.
    const pollApprovals = () =>
      void client.approvals
        .list({ status: 'pending', limit: 100, ...(options.agentName ? { agent_name: options.agentName } : {}) })
        .then((approvals) => sink.approvals?.(approvals))
        .catch(() => undefined);
    poll();
    pollApprovals();
    const timer = setInterval(() => {
      poll();
      pollApprovals();
    }, LIMITS_POLL_MS);
    return () => {
      clearInterval(timer);
      controller.abort();
    };
  };
  const initial = initialState({ ...(options.capacity ? { capacity: options.capacity } : {}), ...(options.filter ? { filter: options.filter } : {}) });
  // The server's filters in / filter terms, so the header says them the way the user would type them.
  const serverFilter = [
    options.agentName ? `agent=${options.agentName}` : '',
    options.decision ? `decision=${options.decision}` : '',
    // Quoted (a JSON string) when the id holds a space or a quote, as the filter reads it.
    options.sessionId ? `session:${/[\s"]/.test(options.sessionId) ? JSON.stringify(options.sessionId) : options.sessionId}` : '',
  ].filter(Boolean).join(' ');
  const client = new GuardClient({ serverUrl: options.server, ...(options.apiKey ? { apiKey: options.apiKey } : {}), timeoutMs: 5000 });
  const decide: ApprovalDecider = async (verb, id) => {
    try {
      const decided = verb === 'approve' ? await client.approvals.approve(id) : await client.approvals.deny(id, 'denied in guardctl tui');
      return `${decided.status} ${id}`;
    } catch (error) {
      // 403 (a regular key), 409 (decided elsewhere): the server's own words.
      return `not ${verb === 'approve' ? 'approved' : 'denied'}: ${error instanceof Error ? error.message : String(error)}`;
    }
  };
  // Our batcher already limits redraws to 20 per second; Ink's cap matches it.
  const app = render(
    <Dashboard server={options.server} source={source} initial={initial} decide={decide} color={!process.env.NO_COLOR} {...(serverFilter ? { serverFilter } : {})} />,
    { maxFps: 20, exitOnCtrlC: true },
  );
  await app.waitUntilExit();
  return final;
}
