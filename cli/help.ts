/**
 * Examples at the end of every command's --help (docs/output-style.md, "Help"): a comment
 * saying what it does, then the command as it is typed, kubectl-style, so it can be copied.
 * test/cli/help.test.ts holds every registered command to it and checks that each example
 * uses only options the command has.
 */
import type { Command } from 'commander';

/** What the example does, and the command line (starting with `guardctl <command>`, or an environment assignment then it). */
export type Example = readonly [what: string, line: string];

export function withExamples(command: Command, examples: readonly Example[]): Command {
  return command.addHelpText('after', examplesText(examples));
}

export function examplesText(examples: readonly Example[]): string {
  return ['', 'Examples:', ...examples.flatMap(([what, line]) => [`  # ${what}`, `  ${line}`, ''])].join('\n').trimEnd();
}
