/**
 * Watches a controls directory with chokidar and calls `onChange` once per burst of
 * changes (debounced). Only `*.yaml` / `*.yml` count; editor leftovers (swap files,
 * backups, `.#lock` files, vim's `4913` probe, dotfiles) are ignored. Atomic saves
 * (write a temp file, rename it over the original) and renames arrive as ordinary
 * change/add/unlink events.
 *
 * The watcher also checks the directory itself every `reappearPollMs`: its identity
 * (device, inode and birth time). The file watcher is bound to the directory it opened, and a
 * directory removed and recreated (or replaced by another moved into its place) can leave
 * it watching one that no longer has the name, silently, and every later edit unseen. So
 * when the directory is gone the watcher is closed and the removal reported; when a
 * directory has the name again, or a different one has it, a new watcher opens on it and
 * the change is reported: a reload then reads whatever is there.
 */
import { stat } from 'node:fs/promises';
import { basename, relative, resolve, sep } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';

export interface WatchOptions {
  /** Quiet time after the last event before `onChange` runs (default 75 ms). */
  debounceMs?: number;
  /** Upper bound on the wait while events keep coming (default 1000 ms). */
  maxWaitMs?: number;
  /** How often to check that the directory is still the one watched, or back (default 250 ms). */
  reappearPollMs?: number;
  onError?: (error: unknown) => void;
  /** Watch mode (startHotReload): two reads of the directory this far apart must agree (default 75 ms). */
  settleMs?: number;
  /** Watch mode (startHotReload): a removal applies when planned again this much later (default 1000 ms). */
  confirmRemovalsMs?: number;
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
  /** `dev:ino:birthtime` of the directory the watcher is bound to; null while none is (the directory is gone). */
  let watchedId: string | null = null;
  let debounce: NodeJS.Timeout | null = null;
  let firstEventAt = 0;
  let checking = false;

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

  const open = (): Promise<void> => {
    const w = watch(root, {
      ignoreInitial: true,
      // Our own debounce instead: awaitWriteFinish would add its polling delay to every reload.
      awaitWriteFinish: false,
      ignored: (path, stats) => isIgnoredPath(root, path, stats?.isFile()),
    });
    watcher = w;
    w.on('all', (event, path) => {
      if (closed || watcher !== w) return;
      const isFileEvent = event === 'add' || event === 'change' || event === 'unlink';
      if (isFileEvent && !YAML_FILE.test(path)) return;
      schedule();
      // The directory itself went away: find out at once rather than at the next check.
      if (event === 'unlinkDir' && resolve(path) === root) void check();
    });
    w.on('error', (error) => onError(error));
    return new Promise((done) => w.once('ready', () => done()));
  };

  /** The directory's identity now, or null when there is no directory of that name. */
  const identityOf = async (): Promise<string | null> => {
    const info = await stat(root).catch(() => null);
    // Inode numbers are reused at once (a directory removed and made again often gets the
    // same one); its birth time tells the new directory from the old.
    return info?.isDirectory() ? `${info.dev}:${info.ino}:${info.birthtimeMs}` : null;
  };

  /** Rebinds the watcher when the directory is gone, back, or another one. */
  const check = async (): Promise<void> => {
    if (closed || checking) return;
    checking = true;
    try {
      const id = await identityOf();
      if (closed || id === watchedId) return;
      const old = watcher;
      watcher = null;
      watchedId = id;
      await old?.close().catch(onError);
      if (closed) return;
      if (id !== null) await open();
      // Whatever happened in between, the next reload reads what is there now.
      schedule();
    } finally {
      checking = false;
    }
  };

  const ready = (async () => {
    watchedId = await identityOf();
    await open();
  })();
  const poll = setInterval(() => void check().catch(onError), pollMs);
  poll.unref();
  return {
    ready,
    async close() {
      closed = true;
      clearInterval(poll);
      if (debounce) clearTimeout(debounce);
      debounce = null;
      await watcher?.close();
      watcher = null;
    },
  };
}
