import { Command } from 'commander';
import { packageVersion } from '../src/version.js';
import { registerServe } from './commands/serve.js';
import { registerTui } from './commands/tui.js';
import { registerValidate } from './commands/validate.js';
import { registerPlan } from './commands/plan.js';
import { registerApply } from './commands/apply.js';
import { registerExport } from './commands/export.js';
import { registerSchema } from './commands/schema.js';
import { registerTest } from './commands/test.js';
import { registerShadowReport } from './commands/shadow-report.js';
import { registerHistory } from './commands/history.js';

/** Every command, registered explicitly in one readable list. */
const commands: Array<(program: Command) => void> = [
  registerServe,
  registerTui,
  registerValidate,
  registerPlan,
  registerApply,
  registerExport,
  registerSchema,
  registerTest,
  registerShadowReport,
  registerHistory,
];

export function buildProgram(): Command {
  const program = new Command('guardctl')
    .description('Controls for AI agent steps: server, GitOps CLI, dashboard')
    .version(packageVersion())
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const register of commands) register(program);
  return program;
}
