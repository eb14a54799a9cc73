/**
 * Watch mode (`guardctl serve --watch DIR`): load and apply the directory before the
 * server listens, then keep the store and the compiled control sets equal to it.
 */
import { UserError } from '../errors.js';
import type { Diagnostic } from '../gitops/diagnostics.js';
import { createReloader, lineOf, type Reloader, type ReloaderDeps, type ReloadResult, type ReloadStatus } from './reloader.js';
import { watchDirectory, type WatchOptions } from './watch.js';

export { createReloader, lineOf, revisionOf } from './reloader.js';
export type { Reloader, ReloaderDeps, ReloadLogger, ReloadResult, ReloadStatus } from './reloader.js';
export { watchDirectory, isIgnoredPath } from './watch.js';
export type { DirectoryWatcher, WatchOptions } from './watch.js';
export { planReload, watchLabel } from './plan-reload.js';
export { readStoreState } from './store-state.js';

/** How long the directory must read the same before a reload uses it (docs/hot-reload.md). */
export const DEFAULT_SETTLE_MS = 75;
/** How long a planned removal waits to be planned again before it is applied (docs/hot-reload.md). */
export const DEFAULT_CONFIRM_REMOVALS_MS = 1000;

/** What the status route reads; null while nothing is watched. */
export interface ReloadStatusSource {
  status(): ReloadStatus | null;
}

export interface HotReload {
  reloader: Reloader;
  /** The load done at start. */
  initial: ReloadResult;
  /** Stops watching and waits for a reload in progress; call before closing the store. */
  close(): Promise<void>;
}

/** The directory did not validate at start: the server must not come up with it. */
export class InvalidWatchDirectoryError extends UserError {
  constructor(
    readonly dir: string,
    readonly diagnostics: Diagnostic[],
  ) {
    const lines = diagnostics.map((d) => `  ${lineOf(d)}${d.hint ? `\n    hint: ${d.hint}` : ''}`);
    super(
      `the watched directory ${dir} is not valid (${diagnostics.length} error${diagnostics.length === 1 ? '' : 's'}):\n${lines.join('\n')}`,
      `fix the files (guardctl validate ${dir} shows each problem in context), then start again`,
    );
    this.name = 'InvalidWatchDirectoryError';
  }
}

/**
 * Loads and applies the directory, then watches it. Throws InvalidWatchDirectoryError
 * when the directory does not validate (nothing is watched then).
 */
export async function startHotReload(deps: ReloaderDeps & { watch?: WatchOptions }): Promise<HotReload> {
  // The first load is the start, not a reload: its failure is the thrown error (printed
  // once by the CLI), so logs, metrics and the live stream only hear from later reloads.
  let live = false;
  const reloader = createReloader({
    ...deps,
    settleMs: deps.watch?.settleMs ?? DEFAULT_SETTLE_MS,
    confirmRemovalsMs: deps.watch?.confirmRemovalsMs ?? DEFAULT_CONFIRM_REMOVALS_MS,
    logger: deps.logger && {
      info: (o, m) => live && deps.logger?.info(o, m),
      warn: (o, m) => live && deps.logger?.warn(o, m),
      error: (o, m) => live && deps.logger?.error(o, m),
    },
    observability: deps.observability && { publishReload: (notice) => live && deps.observability?.publishReload(notice) },
  });
  const initial = await reloader.reloadNow();
  live = true;
  if (initial.result === 'failure') {
    if (initial.diagnostics.some((d) => d.code === 'missing_directory')) {
      throw new UserError(`--watch ${deps.dir}: no such directory: create it, or point --watch at the directory that holds your *.yaml control files`);
    }
    throw new InvalidWatchDirectoryError(deps.dir, initial.diagnostics);
  }

  const pending = new Set<Promise<unknown>>();
  const trigger = () => {
    const run = reloader.reloadNow().catch((error: unknown) => deps.logger?.error({ err: error }, 'hot reload crashed'));
    pending.add(run);
    void run.finally(() => pending.delete(run));
  };
  const watcher = watchDirectory(deps.dir, trigger, {
    ...deps.watch,
    onError: (error) => deps.logger?.warn({ err: error }, 'hot reload: the file watcher reported an error'),
  });
  await watcher.ready;
  // Edits made between the first load and the watcher being ready are picked up here.
  trigger();
  return {
    reloader,
    initial,
    async close() {
      await watcher.close();
      await reloader.close();
      await Promise.all([...pending]);
    },
  };
}
