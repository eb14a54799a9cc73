// The one place that turns errors into output and an exit code (STYLE.md habit 3): the
// binary (main.ts) runs it on process.argv, and tests of the commands run it in-process.
import type { Command } from 'commander';
import { ApiError, UserError } from '../src/errors.js';
import { buildProgram } from './program.js';

/** Runs the command `argv` (as process.argv: node, script, words...) names; resolves with its exit code. */
export async function runMain(argv: string[]): Promise<number> {
  const program = await buildProgram(argv);
  let running: Command | undefined;
  program.hook('preAction', (_root, action) => {
    running = action;
  });
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    const code = reportFailure(error);
    // A machine that asked for JSON gets the failure as JSON on stdout too, even when the
    // command stopped before writing anything (nothing changed): `version` and `error`.
    if (running?.opts<{ format?: string }>().format === 'json' && !isCommanderExit(error)) {
      process.stdout.write(`${JSON.stringify({ version: 1, error: jsonErrorOf(error, code) }, null, 2)}\n`);
    }
    return code;
  }
}

function reportFailure(error: unknown): number {
  if (error instanceof UserError) {
    process.stderr.write(`error: ${error.message}\n`);
    if (error.hint) process.stderr.write(`hint: ${error.hint}\n`);
    return error.exitCode;
  }
  if (error instanceof ApiError) {
    process.stderr.write(`error: ${error.method} ${error.url} answered ${error.status}: ${error.message}\n`);
    for (const issue of error.problem?.errors ?? []) {
      process.stderr.write(`  ${issue.field || '(body)'}: ${issue.message}\n`);
    }
    const hint = hintForStatus(error.status);
    if (hint) process.stderr.write(`hint: ${hint}\n`);
    return 1;
  }
  // commander reports its own usage errors and exits through exitOverride.
  if (isCommanderExit(error)) return error.exitCode;
  process.stderr.write(`internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  return 70;
}

/** The JSON form of a failure: what, the hint, the exit code, and the details some errors carry. */
function jsonErrorOf(error: unknown, exitCode: number): Record<string, unknown> {
  if (error instanceof UserError) {
    return { message: error.message, hint: error.hint ?? null, exit_code: exitCode, ...error.details };
  }
  if (error instanceof ApiError) {
    return { message: error.message, hint: hintForStatus(error.status), exit_code: exitCode, status: error.status, problem: error.problem };
  }
  return { message: `internal error: ${error instanceof Error ? error.message : String(error)}`, hint: null, exit_code: exitCode };
}

function hintForStatus(status: number): string | null {
  if (status === 401) return 'pass a valid key with --api-key or GUARD_API_KEY';
  if (status === 403) return 'this operation needs an admin key (GUARD_ADMIN_API_KEYS on the server)';
  return null;
}

function isCommanderExit(error: unknown): error is { exitCode: number } {
  if (typeof error !== 'object' || error === null) return false;
  const { code, exitCode } = error as { code?: unknown; exitCode?: unknown };
  return typeof code === 'string' && code.startsWith('commander.') && typeof exitCode === 'number';
}
