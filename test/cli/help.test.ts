// Every command's --help ends with examples (docs/output-style.md, "Help"), and each example
// uses only options the command (or the program) has: a renamed flag cannot leave a stale one.
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../cli/program.js';

const program = await buildProgram();
const commands = program.commands.filter((c) => c.name() !== 'help');

function helpOf(command: Command): string {
  let text = '';
  command.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
  command.outputHelp();
  return text;
}

/** The long flags a command accepts: its own and the program's. */
function flagsOf(command: Command): Set<string> {
  return new Set([...command.options, ...program.options].flatMap((o) => [o.long, o.short]).filter((f): f is string => Boolean(f)).concat('--help', '-h'));
}

describe('--help of every command', () => {
  it('guardctl --help ends with examples too', () => {
    const help = helpOf(program);
    expect(help).toMatch(/\nExamples:\n {2}# .+\n {2}guardctl serve --watch controls\n/);
  });

  it('covers the commands this test knows to expect, and any added later', () => {
    expect(commands.map((c) => c.name())).toEqual(expect.arrayContaining(['serve', 'tui', 'validate', 'plan', 'apply', 'export', 'schema', 'test', 'completion']));
  });

  it.each(commands.map((c) => [c.name(), c] as const))('%s has examples that use only its own options', (name, command) => {
    const help = helpOf(command);
    const examples = help.slice(help.indexOf('\nExamples:\n'));
    expect(help).toContain('\nExamples:\n');
    const lines = examples.split('\n').filter((l) => /^ {2}[^ #]/.test(l));
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(line, 'an example runs the command it documents').toMatch(new RegExp(`(^|[ (])guardctl ${name}( |$)`));
      // The command's own words: up to a pipe or a redirection.
      const words = line.slice(line.indexOf(`guardctl ${name}`)).split(/\s[|>]/)[0]!.split(/\s+/);
      for (const word of words.filter((w) => /^--?[a-z]/i.test(w))) {
        expect(flagsOf(command), `${name}: "${line.trim()}" uses ${word}`).toContain(word.replace(/=.*$/, ''));
      }
      // Each example's comment is on the line above it.
      const above = examples.split('\n')[examples.split('\n').indexOf(line) - 1];
      expect(above).toMatch(/^ {2}# \S/);
    }
  });
});
