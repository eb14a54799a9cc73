/**
 * The real server's memory alone, in a process of its own (server-memory-child.ts): its
 * resident set, JS heap and external memory after every agent's set is compiled.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface ServerMemory {
  rss: number;
  heap: number;
  external: number;
}

/** Bytes used by a server on the SQLite file `db` once `agent-0` .. `agent-<agents - 1>` have each been evaluated. */
export function serverMemory(db: string, agents: number): Promise<ServerMemory> {
  const child = fileURLToPath(new URL('./server-memory-child.js', import.meta.url));
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--expose-gc', child, db, String(agents)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    proc.once('exit', (code) => {
      const match = /RSS_BYTES=(\d+)\nHEAP_BYTES=(\d+)\nEXTERNAL_BYTES=(\d+)/.exec(out);
      if (code === 0 && match) resolve({ rss: Number(match[1]), heap: Number(match[2]), external: Number(match[3]) });
      else reject(new Error(`memory child exited with ${code}: ${out}`));
    });
  });
}
