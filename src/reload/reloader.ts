/**
 * One reload of a watched controls directory: read -> validate -> plan -> one transaction
 * -> swap the compiled sets -> tell the metrics and the live stream. Reloads run one at a
 * time; asking during a reload schedules exactly one more after it, so the last change
 * on disk is always the last one applied.
 *
 * A file saved with a plain write can be read half written, and a half file is often
 * valid YAML that lacks its last documents: applied, it would unlink or delete controls
 * for a moment (and recreate them with new ids). So the directory is read until two reads
 * `settleMs` apart agree, and a removal (deleting a control, a policy or a pinned MCP
 * server, unlinking a control) is applied only when the same removals are planned again
 * at least `confirmRemovalsMs` later; the reloader looks again by itself then. Additions
 * and changes apply at once.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { relative, resolve, sep } from 'node:path';
import { changesOf } from '../gitops/changes.js';
import { desiredStateOf } from '../gitops/desired-state.js';
import type { Diagnostic } from '../gitops/diagnostics.js';
import type { Operation } from '../gitops/plan.js';
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
  /** Removals (control, policy and McpServer deletions, unlinks) planned but waiting for confirmation (see above). */
  pending_removals: number;
}

export interface ReloadResult {
  /** `unchanged`: the directory is what was last applied; nothing written, nothing counted. */
  result: 'success' | 'failure' | 'unchanged';
  revision: string | null;
  /** Store operations applied (create, update, delete, link, unlink, agent upserts). */
  operations: number;
  /** Removals planned but not applied yet: they wait to be planned again (confirmRemovalsMs). */
  deferred: number;
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
  /** Two reads of the directory this far apart must agree before it is used (default 0: one read). */
  settleMs?: number;
  /**
   * A removal is applied only when planned again at least this much later (default 0: at
   * once). The first reload (the start) applies everything at once.
   */
  confirmRemovalsMs?: number;
}

export interface Reloader {
  readonly dir: string;
  /** The `managed_by` label of the controls this reloader owns. */
  readonly managedBy: string;
  reloadNow(): Promise<ReloadResult>;
  status(): ReloadStatus;
  /** Cancels a pending confirmation and waits for a reload in progress. */
  close(): Promise<void>;
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
    pending_removals: 0,
  };
  const settleMs = deps.settleMs ?? 0;
  const confirmMs = deps.confirmRemovalsMs ?? 0;
  let first = true;
  let closed = false;
  /** The removals waiting for confirmation: what they are and when they were first planned. */
  let pending: { key: string; since: number } | null = null;
  let recheck: NodeJS.Timeout | null = null;

  let running: Promise<ReloadResult> | null = null;
  let queued: Promise<ReloadResult> | null = null;

  function reloadNow(): Promise<ReloadResult> {
    if (recheck) clearTimeout(recheck);
    recheck = null;
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
    const initial = first;
    first = false;
    const loaded = await readSettled(initial);
    if (!('files' in loaded)) return fail(null, loaded.diagnostics);
    const revision = revisionOf(dir, loaded);
    const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
    if (errors.length > 0) return fail(revision, errors);
    const warnings = loaded.diagnostics.filter((d) => d.severity !== 'error');

    let operations = 0;
    let deferred = 0;
    let touched: string[] = [];
    try {
      const actual = await readStoreState(store);
      const planned = planReload(desiredStateOf(loaded), actual, managedBy);
      if (planned.length === 0 && status.state === 'ok' && revision === status.last_good_revision) {
        pending = null;
        status.pending_removals = 0;
        return { result: 'unchanged', revision, operations: 0, deferred: 0, touched_agents: [], diagnostics: warnings };
      }
      const ops = initial ? planned : confirmedOf(planned);
      deferred = planned.length - ops.length;
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
    Object.assign(status, { state: 'ok', last_good_revision: revision, last_reload_at: at, last_success_at: at, errors: [], pending_removals: deferred });
    status.reloads.success++;
    deps.observability?.publishReload({ timestamp: at, result: 'success', revision, errors: [] });
    const waiting = deferred > 0 ? `; ${deferred} removal${deferred === 1 ? '' : 's'} applied once planned again ${confirmMs} ms later` : '';
    const what = `revision ${revision} (${operations} change${operations === 1 ? '' : 's'}${waiting})`;
    logger.info(
      { dir, revision, operations, deferred, agents: touched, ...(warnings.length > 0 ? { warnings: warnings.map(lineOf) } : {}) },
      recovered ? `hot reload recovered: ${what}; the directory is valid again` : `hot reload applied: ${what}`,
    );
    return { result: 'success', revision, operations, deferred, touched_agents: touched, diagnostics: warnings };
  }

  /**
   * The operations to apply now: all of them when the plan removes nothing, or when it
   * removes what the last plans removed and those were first planned confirmMs ago;
   * otherwise all but the removals, and a look again when the wait is over.
   */
  function confirmedOf(planned: Operation[]): Operation[] {
    const removals = planned.filter(isRemoval);
    if (removals.length === 0 || confirmMs === 0) {
      pending = null;
      return planned;
    }
    const key = JSON.stringify(removals.map(describeRemoval).sort());
    const at = Date.now();
    if (pending?.key === key && at - pending.since >= confirmMs) {
      pending = null;
      return planned;
    }
    if (pending?.key !== key) pending = { key, since: at };
    if (!closed) {
      if (recheck) clearTimeout(recheck);
      recheck = setTimeout(() => void reloadNow().catch((error: unknown) => logger.error({ err: error }, 'hot reload crashed')), pending.since + confirmMs - at);
      recheck.unref();
    }
    return planned.filter((op) => !isRemoval(op));
  }

  /**
   * The directory once two reads `settleMs` apart agree (a save in progress changes it in
   * between), or the last read after a few tries: the removal confirmation covers the rest.
   */
  async function readSettled(initial: boolean): Promise<LoadedDirectory | { diagnostics: Diagnostic[] }> {
    let loaded = await readDirectory();
    if (initial || settleMs === 0) return loaded;
    for (let attempt = 0; attempt < MAX_SETTLE_READS; attempt++) {
      await new Promise((r) => setTimeout(r, settleMs));
      const again = await readDirectory();
      if (sameRead(dir, loaded, again)) return again;
      loaded = again;
    }
    return loaded;
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
    return { result: 'failure', revision, operations: 0, deferred: 0, touched_agents: [], diagnostics: errors };
  }

  return {
    dir,
    managedBy,
    reloadNow,
    status: () => structuredClone(status),
    async close() {
      closed = true;
      if (recheck) clearTimeout(recheck);
      recheck = null;
      await queued?.catch(() => undefined);
      await running?.catch(() => undefined);
    },
  };
}

/** Reads of the directory made while a save is still going on, at most, before using the last. */
const MAX_SETTLE_READS = 10;

/**
 * What unguards an agent if applied from a half-written read: deleting a control or a
 * policy, unlinking, and deleting a pinned MCP server (its gateways would pass every tool
 * through unpinned).
 */
function isRemoval(op: Operation): boolean {
  return op.op === 'delete_control' || op.op === 'unlink' || op.op === 'delete_policy' || op.op === 'delete_mcp_server';
}

function describeRemoval(op: Operation): string {
  return op.op === 'unlink' ? `unlink ${op.agent_name} ${op.control_name}` : `${op.op} ${'name' in op ? op.name : ''}`;
}

/** Whether two reads saw the same thing: the same files with the same contents, or the same failure. */
function sameRead(dir: string, a: LoadedDirectory | { diagnostics: Diagnostic[] }, b: LoadedDirectory | { diagnostics: Diagnostic[] }): boolean {
  if ('files' in a && 'files' in b) return revisionOf(dir, a) === revisionOf(dir, b);
  return !('files' in a) && !('files' in b);
}

/** Problems of the whole directory, where a line and column would mean nothing. */
const DIRECTORY_PROBLEMS = new Set(['missing_directory', 'apply_failed']);

/** `file:line:col field: message` (`dir: message` for the directory), the form logs and the live stream carry. */
export function lineOf(d: Diagnostic): string {
  if (DIRECTORY_PROBLEMS.has(d.code)) return `${d.file}: ${d.message}`;
  const at = `${d.file}:${d.line}:${d.column}`;
  if (d.field === '') return `${at}: ${d.message}`;
  // Most messages already start with their field path: it is said once.
  return d.message.startsWith(`${d.field}: `) ? `${at} ${d.message}` : `${at} ${d.field}: ${d.message}`;
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
