import { Command } from 'commander';
import { packageVersion } from '../src/version.js';

/** Every command, registered explicitly in one readable list. */
const commands: Array<(program: Command) => void> = [];

export function buildProgram(): Command {
  const program = new Command('guardctl')
    .description('Controls for AI agent steps: server, GitOps CLI, dashboard')
    .version(packageVersion())
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const register of commands) register(program);
  return program;
}
