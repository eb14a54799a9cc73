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
import { registerCompletion } from './commands/completion.js';
import { withExamples } from './help.js';
import { registerMcpProxy } from './commands/mcp-proxy.js';

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
  registerCompletion,
  registerMcpProxy,
];

export function buildProgram(): Command {
  const program = new Command('guardctl')
    .description('Controls for AI agent steps: server, GitOps CLI, dashboard')
    .version(packageVersion())
    // Global: accepted before or after the command name (guardctl plan --no-color).
    .option('--no-color', 'no colour in the output, as with NO_COLOR=1 (https://no-color.org)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .hook('preAction', (root) => {
      // One switch for every renderer and the dashboard: they all read NO_COLOR.
      if (root.opts<{ color?: boolean }>().color === false) process.env.NO_COLOR = '1';
    });
  for (const register of commands) register(program);
  withExamples(program, [
    ['the server on http://127.0.0.1:8000, serving and reloading ./controls (what npm start runs)', 'guardctl serve --watch controls'],
    ['check the directory, see what would change, make it so', 'guardctl validate controls && guardctl plan controls && guardctl apply controls'],
    ['watch evaluations live', 'guardctl tui'],
    ["a command's options and examples", 'guardctl plan --help'],
  ]);
  return program;
}
