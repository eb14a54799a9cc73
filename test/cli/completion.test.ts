// `guardctl completion bash|zsh|fish`, loaded into the real shells and asked to complete.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { completionScript } from '../../cli/completion.js';
import { buildProgram } from '../../cli/program.js';

const installed = (shell: string) => spawnSync(shell, ['-c', 'exit 0']).status === 0;
/** CI (.ci/run) installs zsh and fish and sets this, so those cases never skip there. */
const required = process.env.GUARD_REQUIRE_SHELLS === '1';
const skipUnless = (shell: string) => !installed(shell) && !required;
const why = (shell: string) => `${shell} completion: ${shell} is not installed here (apt-get install ${shell}; CI sets GUARD_REQUIRE_SHELLS=1 and installs it)`;

let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-completion-'));
  mkdirSync(join(dir, 'controls'));
  mkdirSync(join(dir, 'exported'));
  writeFileSync(join(dir, 'plan.json'), '{}');
  const program = await buildProgram();
  for (const shell of ['bash', 'zsh', 'fish'] as const) writeFileSync(join(dir, `guardctl.${shell}`), completionScript(shell, program));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('bash', () => {
  /** What bash offers for the words typed so far (the last one being completed). */
  function complete(...words: string[]): string[] {
    const script = `source ${join(dir, 'guardctl.bash')}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _guardctl; printf '%s\\n' "\${COMPREPLY[@]}"`;
    const run = spawnSync('bash', ['-c', script], { cwd: dir, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    return run.stdout.split('\n').filter(Boolean).sort();
  }

  it('completes commands, options, --format choices, shells and directories', () => {
    expect(complete('guardctl', 'pl')).toEqual(['plan']);
    expect(complete('guardctl', '')).toEqual(expect.arrayContaining(['serve', 'plan', 'apply', 'completion', '--no-color']));
    expect(complete('guardctl', '--no-color', 'ap')).toEqual(['apply', 'approvals']);
    expect(complete('guardctl', 'plan', '--for')).toEqual(['--force', '--format']);
    expect(complete('guardctl', 'plan', '--format', '')).toEqual(['json', 'markdown', 'text']);
    expect(complete('guardctl', 'apply', '--auto')).toEqual(['--auto-approve']);
    expect(complete('guardctl', 'schema', '--format', 'y')).toEqual(['yaml']);
    expect(complete('guardctl', 'completion', '')).toEqual(['bash', 'fish', 'zsh']);
    expect(complete('guardctl', 'validate', 'con')).toEqual(['controls']);
    expect(complete('guardctl', 'serve', '--watch', 'ex')).toEqual(['exported']);
    expect(complete('guardctl', 'apply', 'pl')).toEqual(['plan.json']);
  });
});

describe.skipIf(skipUnless('fish'))(installed('fish') ? 'fish' : why('fish'), () => {
  function complete(line: string): string[] {
    const run = spawnSync('fish', ['--no-config', '-c', `source ${join(dir, 'guardctl.fish')}; complete -C '${line}'`], { cwd: dir, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    return run.stdout.split('\n').filter(Boolean).map((l) => l.split('\t')[0]!).sort();
  }

  it('completes commands, options, --format choices, shells and directories', () => {
    expect(complete('guardctl pl')).toEqual(['plan']);
    expect(complete('guardctl plan --for')).toEqual(['--force', '--format']);
    expect(complete('guardctl plan --format ')).toEqual(['json', 'markdown', 'text']);
    expect(complete('guardctl completion ')).toEqual(['bash', 'fish', 'zsh']);
    expect(complete('guardctl validate con')).toEqual(['controls/']);
  });
});

describe.skipIf(skipUnless('zsh') || spawnSync('tmux', ['-V']).status !== 0)(installed('zsh') ? 'zsh (typed under tmux)' : why('zsh'), () => {
  const SOCKET = `guardctl-completion-${process.pid}`;
  const tmux = (...args: string[]) => spawnSync('tmux', ['-L', SOCKET, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  afterAll(() => tmux('kill-server'));

  it('completes an option and its --format choices when Tab is pressed', async () => {
    expect(spawnSync('zsh', ['-n', join(dir, 'guardctl.zsh')]).status).toBe(0);
    // A bare zsh (no user config), compinit, the script, then a half-typed command and Tab.
    const started = tmux('new-session', '-d', '-x', '120', '-y', '10', '-s', 'z', '-c', dir, 'zsh -f');
    expect(started.status).toBe(0);
    tmux('send-keys', '-t', 'z', `autoload -Uz compinit && compinit -u && source ${join(dir, 'guardctl.zsh')} && clear`, 'Enter');
    tmux('send-keys', '-t', 'z', 'guardctl plan --form', 'Tab');
    await vi.waitFor(() => expect(tmux('capture-pane', '-p', '-t', 'z').stdout).toContain('guardctl plan --format'), { timeout: 30_000, interval: 50 });
    tmux('send-keys', '-t', 'z', ' ', 'Tab');
    await vi.waitFor(() => expect(tmux('capture-pane', '-p', '-t', 'z').stdout).toMatch(/json\s+markdown\s+text/), { timeout: 30_000, interval: 50 });
  });
});
