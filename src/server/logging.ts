/**
 * The server's log, in one format from the first line to the last: human lines by default
 * (`2026-01-01T10:00:05.120Z WARN  hot reload failed ...`), or pino's JSON lines with
 * `--log-format json` / GUARD_LOG_FORMAT=json for a log collector. Both come from the same
 * pino records, so a field logged in one format is in the other.
 */
import { hostname } from 'node:os';
import type { FastifyServerOptions } from 'fastify';
import type { ServerConfig } from './config.js';

export const LOG_FORMATS = ['human', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

interface Output {
  write(text: string): unknown;
}

const FASTIFY_LISTENING = 'Server listening at ';
const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const LEVEL_INFO = 30;
const LEVEL_ERROR = 50;
/** pino's own fields, shown by position (time, level, message) or not at all. */
const FRAME_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'msg']);
/** Fields holding lists of problem lines: one indented line each under the entry. */
const LIST_FIELDS = new Set(['errors', 'warnings']);

/** The logger `guardctl serve` runs with unless told otherwise (the benchmarks use it too). */
export function serverLoggerOptions(config: Pick<ServerConfig, 'debug' | 'logFormat'>, out: Output = process.stdout): FastifyServerOptions['logger'] {
  return {
    // Reloads and shutdowns are info; per-request lines only with DEBUG (app.ts, quietLogger).
    level: config.debug ? 'debug' : 'info',
    // Keys must never reach a log line, whatever serializer a future change adds.
    redact: ['req.headers["x-api-key"]', 'req.headers.authorization'],
    hooks: {
      // Fastify announces each address it listens on; the server's own start line says it
      // once, with the database and the watched directory (start.ts).
      logMethod(args, method) {
        if (typeof args[0] === 'string' && args[0].startsWith(FASTIFY_LISTENING)) return;
        method.apply(this, args);
      },
    },
    ...(config.logFormat === 'human' ? { stream: humanLogStream(out) } : {}),
  };
}

/** A pino destination that turns each JSON record into human lines on `out`. */
export function humanLogStream(out: Output): { write(line: string): void } {
  return {
    write(line: string) {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        out.write(line);
        return;
      }
      out.write(humanLogLine(record));
    },
  };
}

/**
 * `TIME LEVEL message key=value ...`, then one indented line per listed problem (and the
 * stack of an error logged at error level). Ends with a newline.
 */
export function humanLogLine(record: Record<string, unknown>): string {
  const level = typeof record.level === 'number' ? record.level : LEVEL_INFO;
  const time = typeof record.time === 'number' ? new Date(record.time).toISOString() : '';
  const head = [time, (LEVEL_NAMES[level] ?? String(level)).padEnd(5), text(record.msg)].filter((p) => p !== '').join(' ');
  const pairs: string[] = [];
  const below: string[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (FRAME_FIELDS.has(key) || value === undefined) continue;
    if (LIST_FIELDS.has(key) && Array.isArray(value)) {
      below.push(...value.map((item) => `    ${typeof item === 'string' ? item : JSON.stringify(item)}`));
    } else if (key === 'err' && typeof value === 'object' && value !== null) {
      const err = value as { message?: unknown; stack?: unknown };
      pairs.push(`error=${quoted(text(err.message))}`);
      if (level >= LEVEL_ERROR && typeof err.stack === 'string') below.push(...err.stack.split('\n').slice(1).map((l) => `    ${l.trim()}`));
    } else if (key === 'req' && typeof value === 'object' && value !== null) {
      const req = value as { method?: unknown; url?: unknown };
      pairs.push(`${text(req.method)} ${text(req.url)}`.trim());
    } else if (key === 'res' && typeof value === 'object' && value !== null) {
      pairs.push(`status=${text((value as { statusCode?: unknown }).statusCode)}`);
    } else {
      pairs.push(`${key}=${typeof value === 'string' ? quoted(value) : JSON.stringify(value)}`);
    }
  }
  const first = pairs.length > 0 ? `${head}  ${pairs.join(' ')}` : head;
  return `${[first, ...below].join('\n')}\n`;
}

/** A field as text: strings as they are, anything else as JSON (absent: empty). */
function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function quoted(value: string): string {
  return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
}

/**
 * Prints the server's start line (`guardctl listening on ...`) in the log's format: a
 * human line like the others, or a pino-shaped record (level info) for a collector.
 */
export function startLinePrinter(format: LogFormat, out: Output = process.stdout): (line: string) => void {
  if (format === 'human') return (line) => out.write(humanLogLine({ level: LEVEL_INFO, time: Date.now(), msg: line }));
  return (line) => out.write(`${JSON.stringify({ level: LEVEL_INFO, time: Date.now(), pid: process.pid, hostname: hostname(), msg: line })}\n`);
}
