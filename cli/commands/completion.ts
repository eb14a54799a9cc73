import { Argument, type Command } from 'commander';
import { completionScript, SHELLS, type Shell } from '../completion.js';
import { withExamples } from '../help.js';

export function registerCompletion(program: Command): void {
  const command = program
    .command('completion')
    .description('Print the shell completion script for bash, zsh or fish (commands, options, --format choices, paths)')
    .addArgument(new Argument('<shell>', 'the shell').choices(SHELLS))
    .action((shell: Shell) => {
      process.stdout.write(completionScript(shell, program));
    });
  withExamples(command, [
    ['bash: complete guardctl in this shell (add the line to ~/.bashrc to keep it)', 'source <(guardctl completion bash)'],
    ['zsh: the same, after compinit in ~/.zshrc', 'source <(guardctl completion zsh)'],
    ['fish: install it for every new shell', 'guardctl completion fish > ~/.config/fish/completions/guardctl.fish'],
  ]);
}
