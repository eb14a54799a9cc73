/**
 * Raw HTTP/1.1 over a TCP socket, for what fetch and inject cannot send: malformed framing,
 * bad percent-encoding, invalid UTF-8, bodies that never finish.
 */
import net from 'node:net';
import { loadConfig } from '../../src/server/config.js';
import { startServer, type ServerHandle } from '../../src/server/start.js';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The whole text received before the server closed the connection (or the wait ended). */
  text: string;
  /** Whether the server closed the connection. */
  closed: boolean;
}

export function parseAnswer(text: string, closed: boolean): RawAnswer {
  const end = text.indexOf('\r\n\r\n');
  const head = end === -1 ? text : text.slice(0, end);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body: end === -1 ? '' : text.slice(end + 4), text, closed };
}

/** Sends `request` and reads until the server closes the connection or `waitMs` passes. */
export function rawRequest(port: number, request: string | Buffer, waitMs = 3000): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parseAnswer(Buffer.concat(chunks).toString('utf8'), closed));
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    socket.write(request);
  });
}

/** A real server on a free port, in-memory SQLite, quiet. */
export async function startRawServer(env: Record<string, string> = {}): Promise<{ handle: ServerHandle; port: number }> {
  const config = loadConfig({ PORT: '0', DATABASE_URL: ':memory:', OBSERVABILITY_ENABLED: 'false', ...env });
  const handle = await startServer(config, { handleSignals: false, print: () => undefined, logger: false });
  return { handle, port: Number(new URL(handle.url).port) };
}
