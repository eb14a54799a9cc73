/**
 * Watches a controls directory with chokidar and calls `onChange` once per burst of
 * changes (debounced). Only `*.yaml` / `*.yml` count; editor leftovers (swap files,
 * backups, `.#lock` files, vim's `4913` probe, dotfiles) are ignored. Atomic saves
 * (write a temp file, rename it over the original) and renames arrive as ordinary
 * change/add/unlink events. If the directory itself is removed, the watcher waits for
 * it to come back, reports the removal and the return as changes, and watches again.
 */
import { stat } from 'node:fs/promises';
import { basename, relative, resolve, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';

export interface WatchOptions {
  /** Quiet time after the last event before `onChange` runs (default 75 ms). */
  debounceMs?: number;
  /** Upper bound on the wait while events keep coming (default 1000 ms). */
  maxWaitMs?: number;
  /** How often to look for a removed directory to come back (default 250 ms). */
  reappearPollMs?: number;
  onError?: (error: unknown) => void;
}

export interface DirectoryWatcher {
  /** Resolves once the initial scan is done and changes are being seen. */
  readonly ready: Promise<void>;
  /** Stops watching and clears every timer; nothing keeps the process alive afterwards. */
  close(): Promise<void>;
}

const YAML_FILE = /\.ya?ml$/i;
/** Editor leftovers that may sit beside YAML files: vim swap/backup, emacs lock/backup, temp files. */
const EDITOR_TEMP = /(\.sw[a-p]x?|~|\.tmp|\.bak|\.orig)$|^(4913|#.*#)$/i;

/** True when a path below the root must never trigger a reload. */
export function isIgnoredPath(root: string, path: string, isFile?: boolean): boolean {
  const rel = relative(root, path);
  if (rel === '') return false;
  const parts = rel.split(sep);
  if (parts.some((p) => p.startsWith('.') || p === 'node_modules')) return true;
  const name = basename(path);
  if (EDITOR_TEMP.test(name)) return true;
  return isFile === true && !YAML_FILE.test(name);
}

export function watchDirectory(dir: string, onChange: () => void, options: WatchOptions = {}): DirectoryWatcher {
  const root = resolve(dir);
  const debounceMs = options.debounceMs ?? 75;
  const maxWaitMs = options.maxWaitMs ?? 1000;
  const pollMs = options.reappearPollMs ?? 250;
  const onError = options.onError ?? (() => {});

  let closed = false;
  let watcher: FSWatcher | null = null;
  let debounce: NodeJS.Timeout | null = null;
  let firstEventAt = 0;
  let poll: NodeJS.Timeout | null = null;

  const fire = () => {
    debounce = null;
    firstEventAt = 0;
    if (!closed) onChange();
  };
  const schedule = () => {
    if (closed) return;
    const now = Date.now();
    if (firstEventAt === 0) firstEventAt = now;
    if (debounce) clearTimeout(debounce);
    // Keep pushing the deadline while events come, but never past maxWait.
    const wait = Math.max(0, Math.min(debounceMs, firstEventAt + maxWaitMs - now));
    debounce = setTimeout(fire, wait);
  };

  const start = (): Promise<void> => {
    const w = watch(root, {
      ignoreInitial: true,
      // Our own debounce instead: awaitWriteFinish would add its polling delay to every reload.
      awaitWriteFinish: false,
      ignored: (path, stats) => isIgnoredPath(root, path, stats?.isFile()),
    });
    watcher = w;
    w.on('all', (event, path) => {
      if (closed) return;
      const isFileEvent = event === 'add' || event === 'change' || event === 'unlink';
      if (isFileEvent && !YAML_FILE.test(path)) return;
      if (event === 'unlinkDir' && resolve(path) === root) {
        schedule();
        void waitForReturn();
        return;
      }
      schedule();
    });
    w.on('error', (error) => onError(error));
    return new Promise((done) => w.once('ready', () => done()));
  };

  /** The directory is gone: stop this watcher and look for the directory every pollMs. */
  const waitForReturn = async () => {
    const old = watcher;
    watcher = null;
    await old?.close().catch(onError);
    if (closed || poll) return;
    poll = setInterval(() => {
      stat(root).then(
        async (info) => {
          if (closed || !poll || !info.isDirectory()) return;
          clearInterval(poll);
          poll = null;
          await start();
          schedule();
        },
        () => undefined,
      );
    }, pollMs);
    poll.unref();
  };

  const ready = start();
  return {
    ready,
    async close() {
      closed = true;
      if (debounce) clearTimeout(debounce);
      if (poll) clearInterval(poll);
      debounce = null;
      poll = null;
      await watcher?.close();
      watcher = null;
    },
  };
}
