/**
 * Line-delimited JSON-RPC over stdio, for both sides of the MCP gateway: the MCP server
 * it starts, and its own stdin and stdout.
 *
 * Not the MCP SDK's stdio transports: their read buffer joins every chunk onto the line
 * read so far, which is quadratic in the line's length (a line of 64 MiB held the proxy's
 * only thread for minutes, so nothing else was answered), and a line over the limit
 * closes the connection. Here a line is kept as its chunks, joined once; a line over the
 * limit is skipped to its end and reported, and reading goes on with the next line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { parseMessage } from './mcp-message.js';

/** What a side of the gateway reports beyond messages. */
export interface LineEvents {
  /** A line longer than the limit was skipped (its content is never read). */
  onoversize?: (() => void) | undefined;
  /** A line holding a JSON array (a JSON-RPC batch): each element as it was written. */
  onbatch?: ((items: unknown[]) => void) | undefined;
}

/** Splits a byte stream into lines of at most `max` bytes; linear in the bytes read. */
export class LineReader {
  #chunks: Buffer[] = [];
  #size = 0;
  #skipping = false;

  constructor(
    private readonly max: number,
    private readonly onLine: (line: string) => void,
    private readonly onOversize: () => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (let at = chunk.indexOf(10, start); at !== -1; at = chunk.indexOf(10, start)) {
      if (this.#size === 0 && !this.#skipping) {
        // The whole line is in this chunk (nearly every message): decoded from it, with no copy.
        // 0.93 of the instructions per message read and written back (callgrind, 20,000 messages of a tools/call and its result).
        this.#whole(chunk, start, at);
        start = at + 1;
        continue;
      }
      this.#keep(chunk.subarray(start, at));
      start = at + 1;
      if (this.#skipping) {
        this.#skipping = false;
        continue;
      }
      const line = Buffer.concat(this.#chunks, this.#size).toString('utf8');
      this.#chunks = [];
      this.#size = 0;
      this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
    }
    this.#keep(chunk.subarray(start));
  }

  #whole(chunk: Buffer, start: number, end: number): void {
    if (end - start > this.max) {
      this.onOversize();
      return;
    }
    this.onLine(chunk.toString('utf8', start, end > start && chunk[end - 1] === 13 ? end - 1 : end));
  }

  clear(): void {
    this.#chunks = [];
    this.#size = 0;
    this.#skipping = false;
  }

  #keep(part: Buffer): void {
    if (this.#skipping || part.length === 0) return;
    if (this.#size + part.length > this.max) {
      this.clear();
      this.#skipping = true;
      this.onOversize();
      return;
    }
    this.#chunks.push(part);
    this.#size += part.length;
  }
}

/** Reads lines of JSON-RPC into a transport's callbacks. */
function lineHandler(transport: Transport & LineEvents): (line: string) => void {
  return (line) => {
    if (line.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(line) as unknown;
    } catch (error) {
      transport.onerror?.(error as Error);
      return;
    }
    if (Array.isArray(json)) {
      transport.onbatch?.(json);
      return;
    }
    // As JSONRPCMessageSchema validates it (mcp-message.ts).
    const parsed = parseMessage(json);
    if (!parsed.success) {
      transport.onerror?.(parsed.error);
      return;
    }
    transport.onmessage?.(parsed.data);
  };
}

function write(stream: Writable, message: JSONRPCMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (stream.destroyed || stream.writableEnded) {
      reject(new Error('Not connected'));
      return;
    }
    if (stream.write(`${JSON.stringify(message)}\n`)) resolve();
    else stream.once('drain', resolve);
  });
}

export interface ChildProcessOptions {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string | undefined;
  maxMessageBytes: number;
}

/** The MCP server the gateway starts, spoken to over its stdin and stdout. */
export class ChildProcessTransport implements Transport, LineEvents {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  onoversize?: () => void;
  onbatch?: (items: unknown[]) => void;
  #child: ChildProcess | undefined;
  readonly #reader: LineReader;

  constructor(private readonly options: ChildProcessOptions) {
    this.#reader = new LineReader(options.maxMessageBytes, lineHandler(this), () => this.onoversize?.());
  }

  start(): Promise<void> {
    const o = this.options;
    return new Promise((resolve, reject) => {
      // Its own process group: a server started through a wrapper (npx, a shell script) is
      // ended with its children, which would otherwise run on until their next write fails.
      const child = spawn(o.command, o.args, { env: o.env, cwd: o.cwd, stdio: ['pipe', 'pipe', 'inherit'], shell: false, detached: GROUPS });
      this.#child = child;
      child.once('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once('spawn', () => resolve());
      child.once('close', () => {
        this.#child = undefined;
        this.onclose?.();
      });
      child.stdin.on('error', (error) => this.onerror?.(error));
      child.stdout.on('data', (chunk: Buffer) => this.#reader.push(chunk));
      child.stdout.on('error', (error) => this.onerror?.(error));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    return stdin ? write(stdin, message) : Promise.reject(new Error('Not connected'));
  }

  /**
   * Ends the server's input and waits for it to exit (MCP's stdio shutdown), then asks its
   * process group to stop, then stops it: at most 2 s each. The group is signalled even
   * when the server itself exited, so that nothing it started lingers.
   */
  async close(): Promise<void> {
    const child = this.#child;
    this.#reader.clear();
    if (!child) return;
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    child.stdin?.end();
    await Promise.race([closed, delay(GRACE_MS)]);
    const pid = child.pid;
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      if (!signalGroup(child, pid, signal)) return;
      const deadline = Date.now() + GRACE_MS;
      while (Date.now() < deadline && signalGroup(child, pid, 0)) await delay(25);
    }
  }
}

const GROUPS = process.platform !== 'win32';
const GRACE_MS = 2000;

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

/** Sends a signal to the server's process group (its process alone where there are none); false when none is left. */
function signalGroup(child: ChildProcess, pid: number | undefined, signal: NodeJS.Signals | 0): boolean {
  try {
    if (GROUPS && pid !== undefined) return process.kill(-pid, signal);
    if (child.exitCode !== null || child.signalCode !== null) return false;
    return signal === 0 ? true : child.kill(signal);
  } catch {
    // ESRCH: the group is gone.
    return false;
  }
}

/** The gateway's own side: MCP on this process's stdin and stdout. Its end is the client's close. */
export class StdioLineServerTransport implements Transport, LineEvents {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  onoversize?: () => void;
  onbatch?: (items: unknown[]) => void;
  readonly #reader: LineReader;
  #closed = false;
  readonly #ondata = (chunk: Buffer): void => this.#reader.push(chunk);
  readonly #onend = (): void => void this.close();
  readonly #onerror = (error: Error): void => this.onerror?.(error);

  constructor(
    private readonly input: Readable,
    private readonly output: Writable,
    maxMessageBytes: number,
  ) {
    this.#reader = new LineReader(maxMessageBytes, lineHandler(this), () => this.onoversize?.());
  }

  start(): Promise<void> {
    this.input.on('data', this.#ondata);
    // 'end' when the other side closed the pipe; 'close' also when it was destroyed without an end.
    this.input.once('end', this.#onend);
    this.input.once('close', this.#onend);
    this.input.on('error', this.#onerror);
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return write(this.output, message);
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.input.off('data', this.#ondata);
    this.input.off('end', this.#onend);
    this.input.off('close', this.#onend);
    this.input.off('error', this.#onerror);
    this.input.pause();
    this.#reader.clear();
    this.onclose?.();
    return Promise.resolve();
  }
}
