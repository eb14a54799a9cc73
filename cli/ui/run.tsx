/** Starts the interactive dashboard on the terminal and resolves when the user quits. */
import { render } from 'ink';
import { followEventStream, type EventStreamOptions, type StreamState } from '../../src/client/event-stream.js';
import { Dashboard, type DashboardSource } from './app.js';
import { initialState } from './state.js';

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
        onLagged: (skipped) => sink.lagged(skipped),
        onInvalid: () => sink.invalid(),
        onState: (state) => {
          if (state.kind !== 'closed') final = state;
          sink.connection(state);
        },
      },
    );
    return () => controller.abort();
  };
  const initial = initialState({ ...(options.capacity ? { capacity: options.capacity } : {}), ...(options.filter ? { filter: options.filter } : {}) });
  // The server's filters in / filter terms, so the header says them the way the user would type them.
  const serverFilter = [options.agentName ? `agent=${options.agentName}` : '', options.decision ? `decision=${options.decision}` : ''].filter(Boolean).join(' ');
  // Our batcher already limits redraws to 20 per second; Ink's cap matches it.
  const app = render(
    <Dashboard server={options.server} source={source} initial={initial} color={!process.env.NO_COLOR} {...(serverFilter ? { serverFilter } : {})} />,
    { maxFps: 20, exitOnCtrlC: true },
  );
  await app.waitUntilExit();
  return final;
}
