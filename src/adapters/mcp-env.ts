/**
 * The environment of an MCP server the gateway starts. Not the gateway's own: that holds
 * the guard's credentials (GUARD_API_KEY) and whatever else the operator's shell has,
 * and a server could read them back and send them anywhere. It gets what a process needs
 * to start (the names below, none of them a secret), the names the operator lists
 * (`--pass-env`), and the values the operator sets for it.
 */

/** Enough to find executables, a home and a temporary directory, and to speak the locale. */
const BASELINE: readonly string[] = [
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR', 'TEMP', 'TMP',
  // Windows needs these for a process to start at all.
  'SYSTEMROOT', 'SystemRoot', 'WINDIR', 'COMSPEC', 'PATHEXT', 'APPDATA', 'LOCALAPPDATA', 'USERPROFILE', 'PROGRAMFILES',
];

/** A name as `--pass-env` accepts it: what a shell can export. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function upstreamEnv(
  from: NodeJS.ProcessEnv,
  passNames: readonly string[] = [],
  set: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of [...BASELINE, ...passNames]) {
    const value = from[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, ...set };
}
