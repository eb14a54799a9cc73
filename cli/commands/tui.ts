/** `guardctl tui`: the live dashboard, or event lines when there is no terminal. */
import { Option, type Command } from 'commander';
import { UserError } from '../../src/errors.js';
import { isValidSessionId } from '../../src/model/session.js';
import { isCi } from '../confirm.js';
import { withExamples } from '../help.js';
import type { StreamState } from '../../src/client/event-stream.js';

export interface TuiOptions {
  server: string;
  apiKey?: string;
  agent?: string;
  decision?: 'allow' | 'deny' | 'steer' | 'ask';
  session?: string;
  format: 'text' | 'json';
  filter?: string;
}

/** What commander hands the action: every option is a string when given. */
export interface RawTuiOptions {
  server?: string;
  apiKey?: string;
  agent?: string;
  decision?: string;
  session?: string;
  filter?: string;
  format?: string;
}

export function parseTuiOptions(raw: RawTuiOptions, env: NodeJS.ProcessEnv = process.env): TuiOptions {
  const server = raw.server ?? env.GUARD_URL ?? 'http://127.0.0.1:8000';
  try {
    new URL(server);
  } catch {
    throw new UserError(`--server ${server} is not a URL`, 'for example --server http://127.0.0.1:8000');
  }
  const apiKey = raw.apiKey ?? env.GUARD_API_KEY;
  return {
    server,
    ...(apiKey ? { apiKey } : {}),
    ...(raw.agent ? { agent: raw.agent } : {}),
    ...(raw.decision ? { decision: raw.decision as TuiOptions['decision'] } : {}),
    ...(raw.session !== undefined ? { session: sessionOption(raw.session) } : {}),
    ...(raw.filter ? { filter: raw.filter } : {}),
    format: raw.format === 'json' ? 'json' : 'text',
  };
}

/** A --session the server would refuse (422) is refused here, before the dashboard opens. */
function sessionOption(id: string): string {
  if (!isValidSessionId(id)) throw new UserError(`--session: not a session id`, 'a session id is 1-128 characters of printable, well-formed text');
  return id;
}

export function registerTui(program: Command): void {
  const command = program
    .command('tui')
    .description('Live terminal dashboard of evaluations (one line per event when stdout is not a terminal)')
    .option('--server <url>', 'server base URL (env GUARD_URL, default http://127.0.0.1:8000)')
    .option('--api-key <key>', 'API key (env GUARD_API_KEY)')
    .option('--agent <name>', 'only this agent (filtered by the server)')
    .addOption(new Option('--decision <decision>', 'only this decision (filtered by the server)').choices(['allow', 'deny', 'steer', 'ask']))
    .option('--session <id>', 'only the steps of this session (filtered by the server)')
    .option('--filter <expr>', 'start with this / filter, for example "control=~sql !agent=test"')
    .addOption(new Option('--format <format>', 'output without a terminal').choices(['text', 'json']).default('text'))
    .action(async (raw: RawTuiOptions) => {
      const options = parseTuiOptions(raw);
      const final = await runTui(options);
      if (final.kind === 'unauthorized' || final.kind === 'error') {
        throw new UserError(
          final.kind === 'unauthorized' ? `${options.server} refused the live stream (HTTP ${final.status})` : final.message,
          final.kind === 'unauthorized' ? final.message : undefined,
        );
      }
    });
  withExamples(command, [
    ['follow the server at GUARD_URL (default http://127.0.0.1:8000)', 'guardctl tui'],
    ['only one agent\'s denials (filtered by the server)', 'guardctl tui --agent support-bot --decision deny'],
    ['follow one session (filtered by the server)', 'guardctl tui --session run-8f2c'],
    ['start with a / filter', "guardctl tui --filter 'control=~sql !stage=post'"],
    ['without a terminal: one JSON line per evaluation', 'guardctl tui --format json | jq -r .decision'],
  ]);
}

/** Interactive only with a terminal on both ends and no machine format asked for. */
export async function runTui(options: TuiOptions): Promise<StreamState> {
  const stream = {
    server: options.server,
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    ...(options.agent ? { agentName: options.agent } : {}),
    ...(options.decision ? { decision: options.decision } : {}),
    ...(options.session ? { sessionId: options.session } : {}),
  };
  // Ink draws nothing but the last frame when CI is set, so CI gets event lines instead.
  if (process.stdout.isTTY && process.stdin.isTTY && options.format === 'text' && !isCi(process.env)) {
    // React's development build redraws several times slower; load the production one
    // unless the user asked otherwise (this must happen before React is first imported).
    process.env.NODE_ENV ??= 'production';
    // Ink's chalk reads --no-color from argv when first imported and then drops every style,
    // inverse and bold too (the selected row would vanish). The dashboard leaves out colours
    // itself (NO_COLOR, which --no-color set; ui/palette.ts), so chalk must not see the flag.
    process.argv = process.argv.filter((arg) => arg !== '--no-color');
    const { runInteractive } = await import('../ui/run.js');
    return runInteractive({ ...stream, ...(options.filter ? { filter: options.filter } : {}) });
  }
  const { runPlain } = await import('../ui/plain.js');
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // A closed pipe (`| head`) ends the command instead of crashing it.
  process.stdout.once('error', stop);
  try {
    return await runPlain({ ...stream, signal: controller.signal, format: options.format, out: process.stdout, err: process.stderr });
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

