import type { Command } from 'commander';
import { UserError } from '../../src/errors.js';
import { ApiError } from '../../src/client/index.js';
import { withExamples } from '../help.js';
import { addConnectionOptions, clientOf, connectionOf, formatOption, withServer, type ConnectionFlags } from '../options.js';
import { colors, shouldColor } from '../output/color.js';
import { renderShadowReportJson, renderShadowReportText } from '../output/shadow-report.js';

export interface ShadowReportOptions extends ConnectionFlags {
  format: 'text' | 'json';
  since: string;
  agent?: string;
}

export function registerShadowReport(program: Command): void {
  const command = program
    .command('shadow-report')
    .description('What each control in shadow mode would have done: steps evaluated, would-deny, would-steer, examples')
    .addOption(formatOption(['text', 'json']))
    .option('--since <duration>', 'the window: 30m, 24h, 7d or an ISO time', '24h')
    .option('--agent <name>', 'only this agent\'s controls and steps');
  addConnectionOptions(command).action(async (options: ShadowReportOptions) => {
    process.exitCode = await runShadowReport(options);
  });
  withExamples(command, [
    ['what every shadow control would have done in the last 24 hours', 'guardctl shadow-report'],
    ["one agent's shadow controls over a week, for a script", 'guardctl shadow-report --since 7d --agent support-bot --format json'],
  ]);
}

const DURATION = /^\d{1,6}(m|h|d)$/;

/** `--since`: a duration (m, h, d) or an ISO time, checked before asking the server. */
export function parseSince(text: string): string {
  const trimmed = text.trim();
  if (DURATION.test(trimmed) || !Number.isNaN(Date.parse(trimmed))) return trimmed;
  throw new UserError(`--since "${text}" is not a duration or a time`, 'write it as 30m, 24h, 7d or an ISO time such as 2025-01-31T00:00:00Z');
}

export async function runShadowReport(options: ShadowReportOptions): Promise<number> {
  const since = parseSince(options.since);
  const connection = connectionOf(options);
  const client = clientOf(connection);
  const report = await withServer(connection, async () => {
    try {
      return await client.shadowReport({ since, ...(options.agent ? { agent_name: options.agent } : {}) });
    } catch (error) {
      // A server without observability has no such route (and no figures to report).
      if (error instanceof ApiError && error.status === 404 && error.problem?.detail?.startsWith('no route')) {
        throw new UserError(`${connection.serverUrl} keeps no observability data, so it has no shadow figures`, 'start the server with OBSERVABILITY_ENABLED=true');
      }
      throw error;
    }
  });
  process.stdout.write(
    options.format === 'json'
      ? renderShadowReportJson(report, connection.serverUrl)
      : renderShadowReportText(report, { server: connection.serverUrl, window: DURATION.test(since) ? `last ${since}` : 'window' }, colors(shouldColor(process.stdout))),
  );
  return 0;
}
