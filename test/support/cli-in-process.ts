/**
 * The CLI in-process: runMain (what the binary runs, cli/run.ts) on the words, in the
 * working directory and environment the test names, with stdout and stderr captured and no
 * terminal on any of the three streams (as under runCli, whose child has pipes). A run
 * costs what the command does, not a new Node process loading the CLI (about a second of
 * CPU each), so a test of what commands do can run dozens. Whether the binary itself
 * starts, parses and exits right stays tested as a process (test/e2e, runCli), at least
 * once per command family.
 *
 * It borrows the process's working directory, environment, exit code and standard streams
 * for the run and gives them back after: one run at a time (a second one started meanwhile
 * is refused), never in a worker thread (process.chdir is not available there).
 */
import { cleanEnv } from '../e2e/serve-process.js';
import type { CliRun } from '../e2e/run-cli.js';
import { runMain } from '../../cli/run.js';

let running = false;

type Writer = typeof process.stdout.write;

export async function runCliInProcess(args: string[], options: { cwd: string; env?: Record<string, string> }): Promise<CliRun> {
  if (running) throw new Error('runCliInProcess: another run is in progress (they share the process: await each one)');
  running = true;
  const savedEnv = { ...process.env };
  const savedCwd = process.cwd();
  const savedExitCode = process.exitCode;
  const streams = [process.stdin, process.stdout, process.stderr] as const;
  const savedTty = streams.map((stream) => Object.getOwnPropertyDescriptor(stream, 'isTTY'));
  const savedWrite: [Writer, Writer] = [process.stdout.write, process.stderr.write];
  let stdout = '';
  let stderr = '';
  const capture =
    (append: (text: string) => void): Writer =>
    (chunk: string | Uint8Array, ...rest: unknown[]) => {
      append(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
      const callback = rest.find((r): r is () => void => typeof r === 'function');
      if (callback) queueMicrotask(callback);
      return true;
    };
  try {
    // The environment the binary's child would get: the machine's own minus guardctl's settings, plus the test's.
    const env = cleanEnv(options.env);
    for (const name of Object.keys(process.env)) if (!(name in env)) delete process.env[name];
    Object.assign(process.env, env);
    process.chdir(options.cwd);
    process.exitCode = undefined;
    for (const stream of streams) Object.defineProperty(stream, 'isTTY', { value: false, configurable: true, writable: true });
    process.stdout.write = capture((text) => (stdout += text));
    process.stderr.write = capture((text) => (stderr += text));
    const code = await runMain([process.execPath, 'guardctl', ...args]);
    return { code, stdout, stderr };
  } finally {
    [process.stdout.write, process.stderr.write] = savedWrite;
    streams.forEach((stream, i) => {
      const descriptor = savedTty[i];
      if (descriptor) Object.defineProperty(stream, 'isTTY', descriptor);
      else delete (stream as { isTTY?: boolean }).isTTY;
    });
    process.exitCode = savedExitCode;
    process.chdir(savedCwd);
    for (const name of Object.keys(process.env)) if (!(name in savedEnv)) delete process.env[name];
    Object.assign(process.env, savedEnv);
    running = false;
  }
}
