// `npm run check`: the type check and the lint in one process, over one TypeScript program.
// The lint's typed rules ask the type checker about most of the code, so run apart the two
// built the same program and inferred the same types twice; here the lint asks the checker
// the type check has already filled. Same tsconfig.json, same eslint.config.js: the
// messages are the ones `npx tsc -p tsconfig.json --noEmit` and `npx eslint .` print.
import { ESLint } from 'eslint';
import ts from 'typescript';

const root = new URL('..', import.meta.url).pathname;

function loadProgram() {
  const fail = (diagnostic) => {
    throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  };
  const parsed = ts.getParsedCommandLineOfConfigFile(`${root}tsconfig.json`, { noEmit: true }, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: fail });
  return ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options, projectReferences: parsed.projectReferences });
}

const program = loadProgram();
const diagnostics = ts.getPreEmitDiagnostics(program);
if (diagnostics.length > 0) {
  const host = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };
  const format = process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
  process.stdout.write(`${format(diagnostics, host)}\ntype check: ${diagnostics.length} error(s)\n`);
}

const eslint = new ESLint({
  cwd: root,
  // The TypeScript files are all in tsconfig.json's program; the JavaScript ones are linted
  // without types (eslint.config.js says so).
  overrideConfig: [{ files: ['**/*.ts', '**/*.tsx', '**/*.mts'], languageOptions: { parserOptions: { projectService: false, programs: [program] } } }],
});
const results = await eslint.lintFiles(['.']);
const output = await (await eslint.loadFormatter('stylish')).format(results);
if (output) process.stdout.write(output);

const lintErrors = results.reduce((sum, r) => sum + r.errorCount + r.fatalErrorCount, 0);
process.exitCode = diagnostics.length > 0 || lintErrors > 0 ? 1 : 0;
