// Runs the npm scripts named on the command line at once, one process each:
// `npm run check` (typecheck, lint) and `npm test` (those and build:js) use it. Each of
// them reads the sources on its own and keeps one core busy for most of a minute, so on
// a machine with two cores or more they take about as long as the slowest of them instead
// of their sum. Each one's output is printed whole when it ends (never interleaved), and
// the run fails when any of them fails.
import { spawn } from 'node:child_process';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const names = process.argv.slice(2);
if (names.length === 0) {
  process.stderr.write('usage: node scripts/run-parallel.mjs SCRIPT...\n');
  process.exit(2);
}

function runScript(name) {
  return new Promise((resolve) => {
    const child = spawn(npm, ['run', name], { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks = [];
    child.stdout.on('data', (chunk) => chunks.push(chunk));
    child.stderr.on('data', (chunk) => chunks.push(chunk));
    child.once('error', (error) => resolve({ name, code: 1, output: `${error.message}\n` }));
    child.once('close', (code, signal) => resolve({ name, code: code ?? (signal ? 1 : 0), output: Buffer.concat(chunks).toString() }));
  });
}

const results = await Promise.all(names.map(runScript));
for (const { output } of results) process.stdout.write(output);
for (const { name, code } of results) if (code !== 0) process.stderr.write(`npm run ${name} failed (exit ${code})\n`);
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
