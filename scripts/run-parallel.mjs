// Runs the npm scripts named on the command line at once, one process each (`npm test`
// uses it), so on a machine with two cores or more they take about as long as the slowest
// of them instead of their sum.
//
// An argument `a+b` runs `a`, then `b` once `a` succeeded: `npm test` builds the JavaScript
// the end-to-end tests run, then starts the tests while the type check and lint
// (`npm run check`) go on beside them: the tests spend much of their time waiting for the
// processes and servers they start, which leaves room for the checks.
//
// The output of the last script of the last argument goes straight through, so the tests'
// progress shows as it happens; every other script's output is printed whole when it ends
// (never interleaved line by line). Arguments that name no script of package.json go to
// that last script (`npm test -- test/engine` runs the tests of one folder, after the
// checks). The run fails when any of them fails.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const scripts = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts;
const isChain = (arg) => arg.split('+').every((name) => Object.hasOwn(scripts, name));
const chains = process.argv.slice(2).filter(isChain).map((arg) => arg.split('+'));
const passedOn = process.argv.slice(2).filter((arg) => !isChain(arg));
if (chains.length === 0) {
  process.stderr.write('usage: node scripts/run-parallel.mjs SCRIPT[+SCRIPT...]... [ARGUMENT...]\n');
  process.exit(2);
}
const live = chains.at(-1).at(-1);

function runScript(name) {
  return new Promise((resolve) => {
    const passThrough = name === live;
    const args = passThrough && passedOn.length > 0 ? ['run', name, '--', ...passedOn] : ['run', name];
    const child = spawn(npm, args, { stdio: ['ignore', passThrough ? 'inherit' : 'pipe', passThrough ? 'inherit' : 'pipe'] });
    const chunks = [];
    child.stdout?.on('data', (chunk) => chunks.push(chunk));
    child.stderr?.on('data', (chunk) => chunks.push(chunk));
    child.once('error', (error) => resolve({ name, code: 1, output: `${error.message}\n` }));
    child.once('close', (code, signal) => {
      const output = Buffer.concat(chunks).toString();
      process.stdout.write(output);
      resolve({ name, code: code ?? (signal ? 1 : 0) });
    });
  });
}

async function runChain(chain) {
  const results = [];
  for (const name of chain) {
    const result = await runScript(name);
    results.push(result);
    if (result.code !== 0) {
      for (const skipped of chain.slice(results.length)) process.stderr.write(`npm run ${skipped} not run: npm run ${name} failed\n`);
      break;
    }
  }
  return results;
}

const results = (await Promise.all(chains.map(runChain))).flat();
for (const { name, code } of results) if (code !== 0) process.stderr.write(`npm run ${name} failed (exit ${code})\n`);
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
