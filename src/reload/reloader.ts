/**
 * One reload of a watched controls directory: read -> validate -> plan -> one transaction
 * -> swap the compiled sets -> tell the metrics and the live stream. Reloads run one at a
 * time; asking during a reload schedules exactly one more after it, so the last change
 * on disk is always the last one applied.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { relative, resolve, sep } from 'node:path';
import { changesOf } from '../gitops/changes.js';
import { desiredStateOf } from '../gitops/desired-state.js';
import type { Diagnostic } from '../gitops/diagnostics.js';
import { loadDirectory, type LoadedDirectory } from '../gitops/directory.js';
import { errorMessage } from '../gitops/errors.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { ReloadNotice } from '../model/index.js';
import type { Store } from '../store/types.js';
import { endReloadSpan, RELOAD_SPAN, type SpanStarter } from '../tracing/operation-spans.js';
import { SPAN_KIND, SPAN_STATUS } from '../tracing/types.js';
import { planReload, watchLabel } from './plan-reload.js';
import { readStoreState } from './store-state.js';

export interface ReloadLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What `GET /api/v1/reload/status` answers. */
export interface ReloadStatus {
  /** The directory as given to `serve --watch`. */
  watching: string;
  /** `error` while the directory on disk is invalid (the last good set is being served). */
  state: 'ok' | 'error';
  /** Short sha256 of the files (paths and contents) last applied; null before the first success. */
  last_good_revision: string | null;
  last_reload_at: string | null;
  last_success_at: string | null;
  reloads: { success: number; failure: number };
  /** The current errors, empty when `state` is `ok`. */
  errors: Diagnostic[];
}

export interface ReloadResult {
  /** `unchanged`: the directory is what was last applied; nothing written, nothing counted. */
  result: 'success' | 'failure' | 'unchanged';
  revision: string | null;
  /** Store operations applied (create, update, delete, link, unlink, agent upserts). */
  operations: number;
  touched_agents: string[];
  /** Errors on failure; warnings (unlinked controls, ...) on success. */
  diagnostics: Diagnostic[];
}

export interface ReloaderDeps {
  dir: string;
  store: Store;
  /** The app's compiled-set cache (`app.controlSets`). */
  controlSets: { refresh(agents: readonly string[]): Promise<void>; invalidate(agents: readonly string[] | 'all'): void };
  registry: EvaluatorRegistry;
  /** Counts reloads in `<prefix>_reloads_total` and sends `event: reload` on the live stream. */
  observability?: { publishReload(notice: ReloadNotice): void } | undefined;
  logger?: ReloadLogger | undefined;
  /** Each reload becomes a `guardctl.reload` span (the root of a trace of its own). */
  tracer?: SpanStarter<never> | undefined;
  now?: () => Date;
}

export interface Reloader {
  readonly dir: string;
  /** The `managed_by` label of the controls this reloader owns. */
  readonly managedBy: string;
  reloadNow(): Promise<ReloadResult>;
  status(): ReloadStatus;
}

const SILENT: ReloadLogger = { info() {}, warn() {}, error() {} };

export function createReloader(deps: ReloaderDeps): Reloader {
  const { dir, store, controlSets, registry } = deps;
  const logger = deps.logger ?? SILENT;
  const now = deps.now ?? (() => new Date());
  // The absolute path: two servers watching the same directory agree on who owns what.
  const managedBy = watchLabel(resolve(dir));
  const status: ReloadStatus = {
    watching: dir,
    state: 'ok',
    last_good_revision: null,
    last_reload_at: null,
    last_success_at: null,
    reloads: { success: 0, failure: 0 },
    errors: [],
  };

  let running: Promise<ReloadResult> | null = null;
  let queued: Promise<ReloadResult> | null = null;

  function reloadNow(): Promise<ReloadResult> {
    if (!running) {
      running = tracedReload().finally(() => {
        running = null;
      });
      return running;
    }
    queued ??= running.then(() => {
      queued = null;
      return reloadNow();
    });
    return queued;
  }

  async function tracedReload(): Promise<ReloadResult> {
    const span = deps.tracer?.startSpan(RELOAD_SPAN, SPAN_KIND.internal, null);
    if (!span) return reloadOnce();
    try {
      const r = await reloadOnce();
      const wrote = r.result === 'success' && r.operations > 0 && span.isRecording();
      const setRevision = wrote ? await store.revision().catch(() => null) : null;
      const errors = r.result === 'failure' ? r.diagnostics.length : 0;
      endReloadSpan(span, { dir, result: r.result, revision: r.revision, operations: r.operations, touchedAgents: r.touched_agents.length, errors, setRevision });
      return r;
    } catch (error) {
      span.setStatus({ code: SPAN_STATUS.error, message: 'the reload crashed' });
      span.end();
      throw error;
    }
  }

  async function reloadOnce(): Promise<ReloadResult> {
    const loaded = await readDirectory();
    if (!('files' in loaded)) return fail(null, loaded.diagnostics);
    const revision = revisionOf(dir, loaded);
    const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
    if (errors.length > 0) return fail(revision, errors);
    const warnings = loaded.diagnostics.filter((d) => d.severity !== 'error');

    let operations = 0;
    let touched: string[] = [];
    try {
      const actual = await readStoreState(store);
      const ops = planReload(desiredStateOf(loaded), actual, managedBy);
      if (ops.length === 0 && status.state === 'ok' && revision === status.last_good_revision) {
        return { result: 'unchanged', revision, operations: 0, touched_agents: [], diagnostics: warnings };
      }
      // The whole reload is one transaction: all of it or none of it.
      const changes = changesOf(ops, actual);
      // History names the watched directory (its owner label, `watch:<absolute dir>`) as the actor.
      if (changes.length > 0) ({ touched_agents: touched } = await store.applyChanges(changes, { actor: managedBy, source: 'watch' }));
      operations = changes.length;
    } catch (error) {
      return fail(revision, [directoryProblem(dir, 'apply_failed', `applying the directory failed: ${errorMessage(error)}`, 'fix the cause above; the server keeps the last good controls')]);
    }
    try {
      await controlSets.refresh(touched);
    } catch (error) {
      // The store already holds the new controls; refresh invalidated them, so the next
      // evaluation rebuilds from the store and sees the new set.
      logger.error({ err: error, agents: touched }, 'hot reload: compiling the new control sets failed');
    }
    const at = now().toISOString();
    const recovered = status.state === 'error';
    Object.assign(status, { state: 'ok', last_good_revision: revision, last_reload_at: at, last_success_at: at, errors: [] });
    status.reloads.success++;
    deps.observability?.publishReload({ timestamp: at, result: 'success', revision, errors: [] });
    const what = `revision ${revision} (${operations} change${operations === 1 ? '' : 's'})`;
    logger.info(
      { dir, revision, operations, agents: touched, ...(warnings.length > 0 ? { warnings: warnings.map(lineOf) } : {}) },
      recovered ? `hot reload recovered: ${what}; the directory is valid again` : `hot reload applied: ${what}`,
    );
    return { result: 'success', revision, operations, touched_agents: touched, diagnostics: warnings };
  }

  /** The directory, or its failure as diagnostics (a missing directory is an error, not a crash). */
  async function readDirectory(): Promise<LoadedDirectory | { diagnostics: Diagnostic[] }> {
    for (let attempt = 0; ; attempt++) {
      let loaded: LoadedDirectory;
      try {
        loaded = await loadDirectory(dir, registry);
      } catch (error) {
        // The diagnostic names the directory already: the message must not say it again.
        const gone = (await stat(dir).catch(() => null)) === null;
        const message = gone ? 'no such directory (removed or renamed?)' : errorMessage(error);
        return { diagnostics: [directoryProblem(dir, 'missing_directory', message, 'create the directory again or restart without --watch')] };
      }
      // A file deleted between listing and reading (an editor's save in progress): look again once.
      const vanished = loaded.diagnostics.some((d) => d.code === 'unreadable_file' && d.message.includes('ENOENT'));
      if (!vanished || attempt > 0) return loaded;
    }
  }

  function fail(revision: string | null, errors: Diagnostic[]): ReloadResult {
    const at = now().toISOString();
    Object.assign(status, { state: 'error', last_reload_at: at, errors });
    status.reloads.failure++;
    const lines = errors.map(lineOf);
    deps.observability?.publishReload({ timestamp: at, result: 'failure', revision, errors: lines });
    // One entry: the problems are its `errors` (the human log format prints one per line).
    logger.warn(
      { dir, errors: lines },
      `hot reload failed (${errors.length} error${errors.length === 1 ? '' : 's'}); still serving revision ${status.last_good_revision ?? '(none)'}`,
    );
    return { result: 'failure', revision, operations: 0, touched_agents: [], diagnostics: errors };
  }

  return {
    dir,
    managedBy,
    reloadNow,
    status: () => structuredClone(status),
  };
}

/** Problems of the whole directory, where a line and column would mean nothing. */
const DIRECTORY_PROBLEMS = new Set(['missing_directory', 'apply_failed']);

/** `file:line:col field: message` (`dir: message` for the directory), the form logs and the live stream carry. */
export function lineOf(d: Diagnostic): string {
  if (DIRECTORY_PROBLEMS.has(d.code)) return `${d.file}: ${d.message}`;
  return `${d.file}:${d.line}:${d.column}${d.field ? ` ${d.field}` : ''}: ${d.message}`;
}

/** Short sha256 of every file's path (relative to the directory) and contents. */
export function revisionOf(dir: string, loaded: Pick<LoadedDirectory, 'files'>): string {
  const hash = createHash('sha256');
  const files = loaded.files
    .map((f) => ({ path: relative(dir, f.path).split(sep).join('/'), text: f.text }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const file of files) hash.update(`${file.path}\u0000${file.text}\u0000`);
  return hash.digest('hex').slice(0, 12);
}

function directoryProblem(dir: string, code: string, message: string, hint: string): Diagnostic {
  return { severity: 'error', file: dir, line: 1, column: 1, field: '', code, message, hint };
}
