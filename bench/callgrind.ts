/**
 * Instructions per evaluation request, counted by callgrind (valgrind): a count that moves
 * by a few percent from run to run, where throughput on a shared machine moves by tens.
 * Used by `npm run bench:instructions` (bench/instructions.ts) and by the sections whose
 * goals a throughput on a shared machine cannot resolve (bench/otel.ts).
 *
 * The benchmark server (bench/server-child.ts) runs under callgrind with counting off.
 * This process sends the warm-up requests, then counts the measured ones over the same
 * keep-alive connections: a new client's connections make V8 re-optimise parts of Node's
 * HTTP code for a while, which would be counted as the server's work. V8's hash and random
 * seeds are fixed and its background threads off. Figures are instructions in user space,
 * compilation and collection included.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { ChildRequest, ServerSpec } from './server-process.js';

const run = promisify(execFile);
const CONNECTIONS = 10;

/** Whether valgrind's callgrind can run here (the bench sections that use it skip with a note otherwise). */
export async function callgrindAvailable(): Promise<boolean> {
  try {
    await run('valgrind', ['--version']);
    return true;
  } catch {
    return false;
  }
}

/** Starts a benchmark server under callgrind, counting off; resolves with its URL. */
function startUnderCallgrind(spec: ServerSpec, outDir: string, nodeFlags: readonly string[]): Promise<{ child: ChildProcess; url: string }> {
  const script = fileURLToPath(new URL('./server-child.js', import.meta.url));
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${join(outDir, 'callgrind.%p')}`,
      process.execPath,
      '--single-threaded',
      '--hash-seed=1',
      '--random-seed=1',
      ...nodeFlags,
      script,
      JSON.stringify(spec),
    ],
    { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] },
  );
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'ENOENT' ? new Error('valgrind is not on the PATH: install it (Debian: apt install valgrind)') : err),
    );
    child.once('exit', (code) => reject(new Error(`server under callgrind exited with ${code}: ${log.slice(-2000)}`)));
    child.on('message', (message: { ready?: string }) => {
      if (message.ready) resolve({ child, url: message.ready });
    });
  });
}

/** Sends `count` evaluation requests over `agent`'s connections, CONNECTIONS at a time, the bodies in turn. */
async function send(url: URL, agent: http.Agent, count: number, bodies: readonly string[]): Promise<void> {
  let left = count;
  let next = 0;
  const one = (body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`${url.href} answered ${res.statusCode}`));
          res.resume();
          res.on('end', resolve);
        },
      );
      req.once('error', reject);
      req.end(body);
    });
  const loop = async () => {
    while (left > 0) {
      left--;
      await one(bodies[next++ % bodies.length]!);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
}

/** Asks the benchmark server to write what observability holds (`flush`), or to close and remove its database folder (`close`). */
function ask(child: ChildProcess, op: 'flush' | 'close'): Promise<void> {
  const id = Date.now();
  return new Promise((resolve) => {
    const onMessage = (message: { id?: number }) => {
      if (message.id !== id) return;
      child.off('message', onMessage);
      resolve();
    };
    child.on('message', onMessage);
    child.send({ id, op } satisfies ChildRequest);
  });
}

/**
 * V8 flags for counts that must compare across servers. By default V8 sizes the old
 * generation from how it has grown and how busy the process looked, and a major collection
 * (about 160 million instructions on the best-case server: 80,000 per request in a window of
 * 2,000) came every few thousand requests, in one window and not the next.
 * --predictable-gc-schedule fixes the growing factor and turns off the idle-time and
 * memory-reducing collections: in a trial one major collection came in 16 windows of 1,000
 * requests, and the other 15 were within 1.8% of each other.
 */
export const STEADY_GC_FLAGS: readonly string[] = ['--predictable-gc-schedule'];

/**
 * Windows counted per server by default. A major cycle of the garbage collector comes every
 * few thousand requests and moves one window's count by up to a quarter: the median of
 * three windows reads the common case, and the three counts show the spread.
 */
const WINDOWS = 3;

export interface CountOptions {
  /**
   * Asks the server to flush (`flush`) after every this many warm-up requests. A path that
   * runs only on a flush (a tracing exporter whose timer is pushed out of the way) is
   * otherwise cold when counting starts, and V8 compiles it inside the first windows.
   */
  warmFlushEvery?: number;
}

/**
 * Instructions per measured request of one server under callgrind, in each of `windows`
 * windows of `measured` requests, after `warm` requests that are not counted. `nodeFlags`
 * go to the server's node (V8 flags such as --predictable-gc-schedule).
 */
export async function countInstructions(
  spec: ServerSpec,
  bodies: readonly string[],
  warm: number,
  measured: number,
  windows = WINDOWS,
  nodeFlags: readonly string[] = [],
  options: CountOptions = {},
): Promise<number[]> {
  const outDir = mkdtempSync(join(tmpdir(), 'guard-callgrind-'));
  const { child, url } = await startUnderCallgrind(spec, outDir, nodeFlags);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  try {
    const target = new URL(url);
    if (options.warmFlushEvery !== undefined && !(options.warmFlushEvery >= 1)) throw new Error('warmFlushEvery must be at least 1');
    const every = options.warmFlushEvery ?? warm;
    for (let sent = 0; sent < warm; sent += every) {
      await send(target, agent, Math.min(every, warm - sent), bodies);
      if (options.warmFlushEvery !== undefined) await ask(child, 'flush');
    }
    const pid = String(child.pid);
    for (let w = 0; w < windows; w++) {
      // With observability on, events wait in a buffer for the flush timer (and with tracing
      // on, spans for the exporter's): written inside the counted window they would be the
      // warm-up's, and some counted requests' would be written after it. Flushing on both
      // edges counts exactly the measured requests' writes and exports.
      const background = spec.observability === true || spec.otel !== undefined;
      if (background) await ask(child, 'flush');
      await run('callgrind_control', ['--instr=on', pid]);
      await send(target, agent, measured, bodies);
      if (background) await ask(child, 'flush');
      await run('callgrind_control', ['--instr=off', pid]);
      // Each dump holds what was counted since the one before: this window alone.
      await run('callgrind_control', ['--dump', pid]);
    }
    const dumps = readdirSync(outDir)
      // callgrind.<pid>.<n>: the n-th dump (callgrind.<pid> itself is the file it opened at start).
      .map((f) => /^callgrind\.\d+\.(\d+)$/.exec(f))
      .filter((m): m is RegExpExecArray => m !== null)
      .sort((a, b) => Number(a[1]) - Number(b[1]));
    if (dumps.length !== windows) throw new Error(`callgrind wrote ${dumps.length} dumps, not ${windows}`);
    return dumps.map((m) => {
      const totals = /^totals: (\d+)$/m.exec(readFileSync(join(outDir, m.input), 'utf8'));
      if (!totals) throw new Error(`no totals in the callgrind dump ${m.input}`);
      return Number(totals[1]) / measured;
    });
  } finally {
    agent.destroy();
    child.removeAllListeners('exit');
    // callgrind writes its last dump as the process ends: the folder is removed after that.
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // Closed by request, so that it removes its SQLite folder; killed if that does not come.
    const killer = setTimeout(() => child.kill(), 60_000);
    if (child.connected) await Promise.race([ask(child, 'close'), exited]);
    else child.kill();
    await exited;
    clearTimeout(killer);
    // GUARD_CALLGRIND_KEEP: leave the dumps for callgrind_annotate (profiling by hand). V8's
    // compiled code shows there as bare addresses: with --perf-basic-prof among `nodeFlags`,
    // /tmp/perf-<pid>.map (the server's pid) names the JavaScript function of each.
    if (process.env.GUARD_CALLGRIND_KEEP) process.stderr.write(`callgrind dumps kept in ${outDir}\n`);
    else rmSync(outDir, { recursive: true, force: true });
  }
}
