/**
 * Shell completion scripts (`guardctl completion bash|zsh|fish`), generated from the
 * commander program itself: every registered command, its options, the choices of options
 * like --format, and which options and arguments name files or directories. A command
 * added later completes without touching this file.
 */
import type { Command, Option } from 'commander';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** What completes after an option or in an argument's place. */
type ValueKind = { kind: 'choices'; choices: string[] } | { kind: 'file' } | { kind: 'directory' } | { kind: 'text' };

interface OptionSpec {
  flag: string;
  short: string | null;
  summary: string;
  /** null for a switch (no value). */
  value: ValueKind | null;
}

interface CommandSpec {
  name: string;
  summary: string;
  options: OptionSpec[];
  /** What the positional arguments are. */
  argument: ValueKind | null;
}

/** Options whose value is a path, by name: a directory or a file. */
const DIRECTORY_OPTIONS = new Set(['--watch']);
const FILE_OPTIONS = new Set(['--out', '--db', '--replay']);

export function completionScript(shell: Shell, program: Command): string {
  const spec = specOf(program);
  switch (shell) {
    case 'bash':
      return bashScript(spec);
    case 'zsh':
      return zshScript(spec);
    case 'fish':
      return fishScript(spec);
  }
}

interface ProgramSpec {
  name: string;
  globals: OptionSpec[];
  commands: CommandSpec[];
}

function specOf(program: Command): ProgramSpec {
  const help = program.createHelp();
  return {
    name: program.name(),
    globals: [...help.visibleOptions(program).map(optionSpec), { flag: '--help', short: '-h', summary: 'show help', value: null }].filter(unique),
    commands: help
      .visibleCommands(program)
      .filter((c) => c.name() !== 'help')
      .map((c) => ({
        name: c.name(),
        summary: firstClause(c.description()),
        options: [...help.visibleOptions(c).map(optionSpec)].filter(unique),
        argument: argumentKind(c),
      })),
  };
}

function unique(option: OptionSpec, index: number, all: OptionSpec[]): boolean {
  return all.findIndex((o) => o.flag === option.flag) === index;
}

function optionSpec(option: Option): OptionSpec {
  const flag = option.long ?? option.short ?? '';
  const takesValue = option.required || option.optional;
  let value: ValueKind | null = null;
  if (takesValue) {
    if (option.argChoices) value = { kind: 'choices', choices: [...option.argChoices] };
    else if (DIRECTORY_OPTIONS.has(flag)) value = { kind: 'directory' };
    else if (FILE_OPTIONS.has(flag)) value = { kind: 'file' };
    else value = { kind: 'text' };
  }
  return { flag, short: option.long ? (option.short ?? null) : null, summary: firstClause(option.description), value };
}

function argumentKind(command: Command): ValueKind | null {
  const first = command.registeredArguments[0];
  if (!first) return null;
  if (first.argChoices) return { kind: 'choices', choices: [...first.argChoices] };
  // `[dir]` arguments are directories; anything else (apply's dir or plan file) any path.
  return first.name() === 'dir' ? { kind: 'directory' } : { kind: 'file' };
}

/** The description up to its first parenthesis, colon or semicolon: short enough for a menu. */
function firstClause(text: string): string {
  return text.split(/ \(|: |; /)[0]!.trim();
}

/** The shell function's name: `_guardctl`. */
function functionName(spec: ProgramSpec): string {
  return `_${spec.name.replace(/\W/g, '_')}`;
}

function bashScript(spec: ProgramSpec): string {
  const fn = functionName(spec);
  const words = (list: string[]) => list.join(' ');
  const cases = spec.commands.map((c) => {
    const valued = c.options.filter((o) => o.value !== null);
    const valueCases = valued.map((o) => {
      const flags = [o.flag, o.short].filter(Boolean).join('|');
      return `        ${flags}) ${bashValue(o.value!)}; return ;;`;
    });
    const positional = c.argument ? bashValue(c.argument) : 'COMPREPLY=()';
    return [
      `    ${c.name})`,
      ...(valueCases.length > 0 ? ['      case "$prev" in', ...valueCases, '      esac'] : []),
      `      if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "${words(c.options.map((o) => o.flag))}" -- "$cur")); else ${positional}; fi`,
      '      ;;',
    ].join('\n');
  });
  return `# ${spec.name} completion for bash. Load it with: source <(${spec.name} completion bash)
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" command="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in -*) ;; *) command="\${COMP_WORDS[i]}"; break ;; esac
  done
  if [[ -z "$command" ]]; then
    COMPREPLY=($(compgen -W "${words([...spec.commands.map((c) => c.name), ...spec.globals.map((o) => o.flag)])}" -- "$cur"))
    return
  fi
  case "$command" in
${cases.join('\n')}
  esac
}
complete -o filenames -F ${fn} ${spec.name}
`;
}

function bashValue(value: ValueKind): string {
  switch (value.kind) {
    case 'choices':
      return `COMPREPLY=($(compgen -W "${value.choices.join(' ')}" -- "$cur"))`;
    case 'directory':
      return 'COMPREPLY=($(compgen -d -- "$cur"))';
    case 'file':
      return 'COMPREPLY=($(compgen -f -- "$cur"))';
    case 'text':
      return 'COMPREPLY=()';
  }
}

function zshScript(spec: ProgramSpec): string {
  const fn = functionName(spec);
  const commandList = spec.commands.map((c) => `    ${zshQuote(`${c.name.replace(/:/g, '\\:')}:${c.summary}`)}`);
  const cases = spec.commands.map((c) => {
    const lines = [...c.options.map(zshOption), ...(c.argument ? [zshQuote(`*::${c.argument.kind === 'choices' ? 'shell' : 'path'}:${zshAction(c.argument)}`)] : [])];
    return `        ${c.name})\n          _arguments -s \\\n            ${lines.join(' \\\n            ')}\n          ;;`;
  });
  return `#compdef ${spec.name}
# ${spec.name} completion for zsh. Load it with: source <(${spec.name} completion zsh)
# (after compinit), or save it as _${spec.name} in a directory of $fpath.
${fn}() {
  local -a commands
  commands=(
${commandList.join('\n')}
  )
  local curcontext="$curcontext" state line
  _arguments -C \\
    ${spec.globals.map(zshOption).join(' \\\n    ')} \\
    '1:command:->command' \\
    '*::argument:->argument'
  case $state in
    command) _describe -t commands '${spec.name} command' commands ;;
    argument)
      case $words[1] in
${cases.join('\n')}
      esac
      ;;
  esac
}
if [[ "$funcstack[1]" = "${fn}" ]]; then ${fn} "$@"; else compdef ${fn} ${spec.name}; fi
`;
}

function zshOption(o: OptionSpec): string {
  const summary = o.summary.replace(/[[\]:\\]/g, (ch) => `\\${ch}`);
  const names = o.short ? `{${o.short},${o.flag}}` : o.flag;
  if (o.value === null) return o.short ? `${names}${zshQuote(`[${summary}]`)}` : zshQuote(`${o.flag}[${summary}]`);
  const spec = `=[${summary}]:${o.flag.replace(/^--/, '')}:${zshAction(o.value)}`;
  return o.short ? `${names}${zshQuote(spec)}` : zshQuote(`${o.flag}${spec}`);
}

function zshAction(value: ValueKind): string {
  switch (value.kind) {
    case 'choices':
      return `(${value.choices.join(' ')})`;
    case 'directory':
      return '_files -/';
    case 'file':
      return '_files';
    case 'text':
      return ' ';
  }
}

/** A single-quoted zsh word. */
function zshQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

function fishScript(spec: ProgramSpec): string {
  const c = `complete -c ${spec.name}`;
  const lines = [`# ${spec.name} completion for fish. Load it with: ${spec.name} completion fish | source`, `${c} -f`];
  for (const o of spec.globals) lines.push(fishOption(c, null, o));
  for (const command of spec.commands) lines.push(`${c} -n __fish_use_subcommand -a ${command.name} -d ${fishQuote(command.summary)}`);
  for (const command of spec.commands) {
    const when = `-n ${fishQuote(`__fish_seen_subcommand_from ${command.name}`)}`;
    for (const o of command.options) lines.push(fishOption(c, when, o));
    const arg = command.argument;
    if (arg?.kind === 'choices') lines.push(`${c} ${when} -a ${fishQuote(arg.choices.join(' '))}`);
    else if (arg?.kind === 'directory') lines.push(`${c} ${when} -a '(__fish_complete_directories)'`);
    else if (arg?.kind === 'file') lines.push(`${c} ${when} -F`);
  }
  return `${lines.join('\n')}\n`;
}

function fishOption(c: string, when: string | null, o: OptionSpec): string {
  const parts = [c];
  if (when) parts.push(when);
  parts.push(`-l ${o.flag.replace(/^--/, '')}`);
  if (o.short) parts.push(`-s ${o.short.replace(/^-/, '')}`);
  const value = o.value;
  if (value?.kind === 'choices') parts.push(`-x -a ${fishQuote(value.choices.join(' '))}`);
  else if (value?.kind === 'directory') parts.push(`-x -a '(__fish_complete_directories)'`);
  else if (value?.kind === 'file') parts.push('-r -F');
  else if (value?.kind === 'text') parts.push('-x');
  parts.push(`-d ${fishQuote(o.summary)}`);
  return parts.join(' ');
}

function fishQuote(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
