/** `plan --replay`: read the recorded steps, compile both sides, replay. */
import type { GuardClient } from '../client/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { ActualState } from '../gitops/desired-state.js';
import type { LoadResult } from '../gitops/load.js';
import { replay } from './replay.js';
import { fetchRecordings, readJsonLinesFile, type SourceRead } from './sources.js';
import { fetchActualState } from '../gitops/fetch-state.js';
import { compileReplaySides } from './sides.js';
import type { ReplayReport } from './types.js';

export const DEFAULT_REPLAY_LIMIT = 10_000;

export interface ReplayRequest {
  client: GuardClient;
  registry: EvaluatorRegistry;
  /** The directory: the "after" side. */
  loaded: Pick<LoadResult, 'controls' | 'agents'>;
  /** The server's state if already fetched (plan fetched it); else it is read. */
  actual?: ActualState;
  /** `true`: the server's recordings API; a string: a JSON-lines file. */
  source: true | string;
  limit?: number;
}

export async function replayPlan(request: ReplayRequest): Promise<ReplayReport> {
  const limit = request.limit ?? DEFAULT_REPLAY_LIMIT;
  const read: SourceRead =
    request.source === true
      ? await fetchRecordings(request.client, { limit })
      : await readJsonLinesFile(request.source, limit);
  const actual = request.actual ?? (await fetchActualState(request.client));
  const sides = compileReplaySides(
    {
      controls: actual.controls.map((c) => ({ control_id: c.control_id, name: c.name, data: c.data === null ? null : { ...c.data, enabled: c.enabled } })),
      agents: actual.agents,
    },
    { controls: request.loaded.controls, agents: request.loaded.agents },
    request.registry,
  );
  const report = await replay(read.records, sides.before, sides.after, {
    common: sides.common,
    source: request.source === true ? `${request.client.serverUrl}/api/v1/recordings` : request.source,
    sourceSkipped: read.skipped,
  });
  if (read.recording !== undefined) report.recording = read.recording;
  if (read.truncated) report.warnings.push(`stopped at --replay-limit ${limit}; older or later steps were not replayed`);
  return report;
}
