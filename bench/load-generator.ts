import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface LoadOptions {
  url: string;
  body: string;
  /** Several bodies, sent in turn on every connection (`body` is then unused). */
  bodies?: readonly string[] | undefined;
  headers?: Record<string, string>;
  connections: number;
  /** Seconds measured. */
  duration: number;
  /** Seconds of warm-up before the measured run. */
  warmup?: number;
  /**
   * Called between the warm-up and the measured run; the generator waits for it (a CPU
   * reading of the server taken here covers the measured run only).
   */
  beforeMeasure?: () => Promise<void>;
}

export interface LoadSummary {
  rps: number;
  p50: number;
  p99: number;
  total: number;
  /** Non-2xx answers and socket errors. */
  failed: number;
}

/** POSTs `body` at `url` from a separate process (bench/load-child.ts) and returns its summary. */
export function runLoad(options: LoadOptions): Promise<LoadSummary> {
  const child = fileURLToPath(new URL('./load-child.js', import.meta.url));
  const args = JSON.stringify({
    url: options.url,
    method: 'POST',
    body: options.body,
    ...(options.bodies ? { requests: options.bodies.map((body) => ({ method: 'POST', body })) } : {}),
    headers: { 'content-type': 'application/json', ...options.headers },
    connections: options.connections,
    duration: options.duration,
    warmup: options.warmup ?? 0,
  });
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [child, args], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
    // The generator says when its warm-up is over and waits to be told to go on.
    proc.on('message', (message: { warm?: boolean }) => {
      if (!message.warm) return;
      void (options.beforeMeasure?.() ?? Promise.resolve()).then(
        () => proc.send({ go: true }),
        () => proc.kill(),
      );
    });
    let out = '';
    proc.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    proc.once('exit', (code) => {
      try {
        if (code !== 0) throw new Error(`load generator exited with ${code}`);
        resolve(JSON.parse(out) as LoadSummary);
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}
