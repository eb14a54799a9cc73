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
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { ChildRequest, ChildStats, ServerSpec } from './server-process.js';

const run = promisify(execFile);
/** Keep-alive connections each counted server is sent its requests over. */
export const CONNECTIONS = 10;

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
export async function send(url: URL, agent: http.Agent, count: number, bodies: readonly string[]): Promise<void> {
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

/**
 * Asks the benchmark server to write what observability holds (`flush`), to write its
 * sessions' touched rows (`write-sessions`), or to close and remove its database folder (`close`).
 */
function ask(child: ChildProcess, op: ChildRequest['op']): Promise<{ stats?: ChildStats }> {
  const id = Date.now();
  return new Promise((resolve) => {
    const onMessage = (message: { id?: number; stats?: ChildStats }) => {
      if (message.id !== id) return;
      child.off('message', onMessage);
      resolve(message);
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
 * --no-allocation-site-pretenuring: V8 decides per allocation site, from how many of its
 * objects survived a scavenge, to allocate them in the old generation from then on. Which
 * sites it picks follows how many requests were in flight at the scavenges, so it differs
 * from process to process: one of two identical baselines so decided read 216,000-220,000
 * instructions per request (a mark-compact in every window of 3,000 requests, hundreds of
 * old-generation allocations through the runtime) against 127,000 for the other.
 */
export const STEADY_GC_FLAGS: readonly string[] = ['--predictable-gc-schedule', '--no-allocation-site-pretenuring'];

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
 * How long a counted server keeps an idle keep-alive connection open. Fastify closes one
 * after 72 s, and a server counted in turn with others idles longer than that under
 * callgrind: the client then connects again, and V8 optimises the new connections' HTTP
 * code afresh (in a trial, 170 million instructions of Turbofan compilation in the first
 * window after such a gap: 57,000 per request of it).
 */
const KEEP_ALIVE_MS = 3_600_000;

/** A benchmark server under callgrind, counting off except in the windows asked for. */
export interface CountedServer {
  /** Sends `count` requests over its keep-alive connections, not counted. */
  send(count: number): Promise<void>;
  /** Asks the server (see `ask`), not counted. */
  ask(op: ChildRequest['op']): Promise<void>;
  /** Connections the server accepted so far: CONNECTIONS unless it closed some, or another client came. */
  connections(): Promise<number>;
  /** Instructions counted while `work` runs: one window, dumped on its own. */
  count(work: () => Promise<void>): Promise<number>;
  /** Instructions per request of one window of `measured` requests. */
  window(measured: number): Promise<number>;
  /** Closes the server (it removes its SQLite folder) and its dumps, unless GUARD_CALLGRIND_KEEP. */
  close(): Promise<void>;
}

/**
 * Starts one server under callgrind, sent `bodies` in turn. Several may be alive at once
 * and counted in turn (bench/sessions.ts): one idle between its windows runs only its timers.
 */
export async function startCounted(spec: ServerSpec, bodies: readonly string[], nodeFlags: readonly string[] = []): Promise<CountedServer> {
  const outDir = mkdtempSync(join(tmpdir(), 'guard-callgrind-'));
  const { child, url } = await startUnderCallgrind({ ...spec, keepAliveMs: KEEP_ALIVE_MS }, outDir, nodeFlags);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const target = new URL(url);
  const pid = String(child.pid);
  // With observability on, events wait in a buffer for the flush timer (and with tracing
  // on, spans for the exporter's): written inside the counted window they would be the
  // warm-up's, and some counted requests' would be written after it. Flushing on both
  // edges counts exactly the measured requests' writes and exports.
  const background = spec.observability === true || spec.otel !== undefined;
  let dumps = 0;
  const count = async (work: () => Promise<void>) => {
    await run('callgrind_control', ['--instr=on', pid]);
    await work();
    await run('callgrind_control', ['--instr=off', pid]);
    // Each dump holds what was counted since the one before: this window alone.
    await run('callgrind_control', ['--dump', pid]);
    // callgrind.<pid>.<n>: the n-th dump (callgrind.<pid> itself is the file it opened at start).
    const file = join(outDir, `callgrind.${pid}.${++dumps}`);
    const totals = /^totals: (\d+)$/m.exec(readFileSync(file, 'utf8'));
    if (!totals) throw new Error(`no totals in the callgrind dump ${file}`);
    return Number(totals[1]);
  };
  return {
    send: (n) => send(target, agent, n, bodies),
    ask: async (op) => void (await ask(child, op)),
    connections: async () => (await ask(child, 'stats')).stats!.connections,
    count,
    async window(measured) {
      if (background) await ask(child, 'flush');
      const total = await count(async () => {
        await send(target, agent, measured, bodies);
        if (background) await ask(child, 'flush');
      });
      return total / measured;
    },
    async close() {
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
    },
  };
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
  const server = await startCounted(spec, bodies, nodeFlags);
  try {
    if (options.warmFlushEvery !== undefined && !(options.warmFlushEvery >= 1)) throw new Error('warmFlushEvery must be at least 1');
    const every = options.warmFlushEvery ?? warm;
    for (let sent = 0; sent < warm; sent += every) {
      await server.send(Math.min(every, warm - sent));
      if (options.warmFlushEvery !== undefined) await server.ask('flush');
    }
    const counts: number[] = [];
    for (let w = 0; w < windows; w++) counts.push(await server.window(measured));
    return counts;
  } finally {
    await server.close();
  }
}
