import { execFile } from 'node:child_process';
import { cleanEnv, MAIN } from './serve-process.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the built binary once with a clean environment plus `env`, and resolves with its exit
 * code (99 when it was killed, e.g. by the 60 s timeout) and output; never rejects.
 */
export function runCli(args: string[], options: { cwd: string; env?: Record<string, string> }): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { cwd: options.cwd, env: cleanEnv(options.env), timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 99) : 0, stdout, stderr });
    });
  });
}
