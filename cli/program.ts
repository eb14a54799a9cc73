import { Command } from 'commander';
import { packageVersion } from '../src/version.js';
import { withExamples } from './help.js';

type Register = (program: Command) => void;

/**
 * Every command, in one readable list. A command's module (and what it imports: the
 * server, the store, the evaluators) is loaded only when that command runs, or when every
 * command must be listed (help, completion, an unknown word): `guardctl --version` and
 * `guardctl history` do not load Fastify and SQLite.
 */
const COMMANDS: ReadonlyArray<readonly [name: string, load: () => Promise<Register>]> = [
  ['serve', async () => (await import('./commands/serve.js')).registerServe],
  ['tui', async () => (await import('./commands/tui.js')).registerTui],
  ['validate', async () => (await import('./commands/validate.js')).registerValidate],
  ['plan', async () => (await import('./commands/plan.js')).registerPlan],
  ['apply', async () => (await import('./commands/apply.js')).registerApply],
  ['export', async () => (await import('./commands/export.js')).registerExport],
  ['schema', async () => (await import('./commands/schema.js')).registerSchema],
  ['test', async () => (await import('./commands/test.js')).registerTest],
  ['eval', async () => (await import('./commands/eval.js')).registerEval],
  ['shadow-report', async () => (await import('./commands/shadow-report.js')).registerShadowReport],
  ['history', async () => (await import('./commands/history.js')).registerHistory],
  ['approvals', async () => (await import('./commands/approvals.js')).registerApprovals],
  ['completion', async () => (await import('./commands/completion.js')).registerCompletion],
  ['mcp-proxy', async () => (await import('./commands/mcp-proxy.js')).registerMcpProxy],
  ['mcp-pin', async () => (await import('./commands/mcp-pin.js')).registerMcpPin],
];

/** Commands that read the whole program (the completion script lists every command). */
const NEEDS_ALL = new Set(['completion']);

/**
 * The commands `argv` (process.argv) needs registered: the one it names, none for a bare
 * `--version`, and all of them otherwise. Without argv, all of them.
 */
export function commandsFor(argv?: readonly string[]): string[] {
  const all = COMMANDS.map(([name]) => name);
  if (argv === undefined) return all;
  const args = argv.slice(2);
  // The program's own options (--no-color, --version) all come without a value.
  const at = args.findIndex((a) => !a.startsWith('-'));
  const before = at === -1 ? args : args.slice(0, at);
  // `guardctl --help plan` is the program's help, which lists every command.
  if (before.includes('--help') || before.includes('-h')) return all;
  if (at === -1) return before.includes('--version') || before.includes('-V') ? [] : all;
  const word = args[at]!;
  return all.includes(word) && !NEEDS_ALL.has(word) ? [word] : all;
}

/** The program with the commands `argv` needs (see commandsFor); all of them without argv. */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
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
  const wanted = new Set(commandsFor(argv));
  const registers = await Promise.all(COMMANDS.filter(([name]) => wanted.has(name)).map(([, load]) => load()));
  for (const register of registers) register(program);
  withExamples(program, [
    ['the server on http://127.0.0.1:8000, serving and reloading ./controls (what npm start runs)', 'guardctl serve --watch controls'],
    ['check the directory, see what would change, make it so', 'guardctl validate controls && guardctl plan controls && guardctl apply controls'],
    ['watch evaluations live', 'guardctl tui'],
    ["a command's options and examples", 'guardctl plan --help'],
  ]);
  return program;
}
