#!/usr/bin/env node
// The one place that turns errors into output and an exit code (STYLE.md habit 3).
import { ApiError, UserError } from '../src/errors.js';
import { buildProgram } from './program.js';

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    return reportFailure(error);
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

process.exitCode = await main(process.argv);
