#!/usr/bin/env node
// The binary: runs the command (run.ts turns errors into output and an exit code); only
// this file sets the process's exit code.
import { runMain } from './run.js';

// A reader that stops early (`guardctl schema | head`) closes stdout: what is left to print
// is dropped, quietly, and the command still finishes (an apply is not cut off halfway).
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error;
});
process.exitCode = await runMain(process.argv);
