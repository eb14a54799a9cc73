// The program loads only the command that runs (cli/program.ts): which commands each
// command line registers, and that help and completion still see every command.
import { describe, expect, it } from 'vitest';
import { buildProgram, commandsFor } from '../../cli/program.js';

const ALL = ['serve', 'tui', 'validate', 'plan', 'apply', 'export', 'schema', 'test', 'eval', 'shadow-report', 'history', 'approvals', 'completion', 'mcp-proxy', 'mcp-pin'];
const argv = (...args: string[]) => ['node', 'guardctl', ...args];

describe('commandsFor', () => {
  it.each([
    [['plan', 'controls', '--server', 'http://x'], ['plan']],
    [['--no-color', 'validate', 'controls'], ['validate']],
    [['history', '--help'], ['history']],
    [['--version'], []],
    [['-V'], []],
  ])('%j registers %j', (args, expected) => {
    expect(commandsFor(argv(...args))).toEqual(expected);
  });

  it.each([
    [[]],
    [['--help']],
    [['--help', 'plan']],
    [['-h', 'plan']],
    [['help', 'plan']],
    [['completion', 'bash']],
    [['plna']],
  ])('%j registers every command', (args) => {
    expect(commandsFor(argv(...args))).toEqual(ALL);
  });
});

describe('buildProgram', () => {
  it('without argv has every command, as help and completion need', async () => {
    const program = await buildProgram();
    expect(program.commands.map((c) => c.name())).toEqual(ALL);
  });

  it('for one command line has that command alone', async () => {
    const program = await buildProgram(argv('apply', 'controls'));
    expect(program.commands.map((c) => c.name())).toEqual(['apply']);
  });
});
