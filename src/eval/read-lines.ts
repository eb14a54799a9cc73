/**
 * A dataset's lines, streamed: the file is read in chunks and each line handed on as it
 * completes, so a dataset of any size is read in the memory of its longest line.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/** The lines of `path` (`-` for standard input), without their line ends. */
export function readLines(path: string): AsyncIterable<string> {
  const input = path === '-' ? process.stdin : createReadStream(path, { encoding: 'utf8' });
  return createInterface({ input, crlfDelay: Infinity });
}
