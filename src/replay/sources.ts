/**
 * Where recorded steps come from: a JSON-lines file (each line `{agent_name, stage, step}`)
 * or the server's recordings API (paged). Lines that are not JSON are counted and named
 * by line number; shape checks happen in replay().
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { GuardClient } from '../client/index.js';
import type { RawRecord } from './types.js';

export interface SourceRead {
  records: RawRecord[];
  skipped: { count: number; warnings: string[] };
  /** True when the limit stopped the read before the end. */
  truncated: boolean;
  /** From the server: whether it records steps at all (GUARD_RECORD_STEPS). */
  recording?: boolean;
}

const MAX_WARNINGS = 20;

/** PURE: JSON-lines text -> records. Blank lines are ignored. */
export function parseJsonLines(text: string, limit = Number.POSITIVE_INFINITY): SourceRead {
  const out = newRead();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (out.records.length >= limit) {
      out.truncated = lines.slice(i).some((l) => l.trim() !== '');
      break;
    }
    addLine(out, lines[i]!, i + 1);
  }
  return out;
}

/** Streams a JSON-lines file, so a large recording never has to fit in one string. */
export async function readJsonLinesFile(path: string, limit = Number.POSITIVE_INFINITY): Promise<SourceRead> {
  const out = newRead();
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  let n = 0;
  try {
    for await (const line of lines) {
      n++;
      if (out.records.length >= limit) {
        if (line.trim() !== '') {
          out.truncated = true;
          break;
        }
        continue;
      }
      addLine(out, line, n);
    }
  } finally {
    lines.close();
  }
  return out;
}

/** Reads up to `limit` recorded steps from the server, following `next_cursor`. */
export async function fetchRecordings(
  client: Pick<GuardClient, 'listRecordings'>,
  options: { limit: number; agent_name?: string; since?: string; pageSize?: number },
): Promise<SourceRead> {
  const out = newRead();
  const pageSize = options.pageSize ?? 1000;
  let cursor: number | null = null;
  while (out.records.length < options.limit) {
    const page = await client.listRecordings({
      agent_name: options.agent_name,
      since: options.since,
      limit: Math.min(pageSize, options.limit - out.records.length),
      cursor,
    });
    if (page.recording !== undefined) out.recording = page.recording;
    for (const r of page.steps) {
      const value = { agent_name: r.agent_name, stage: r.stage, step: r.step, ...(r.session_id ? { session_id: r.session_id } : {}) };
      const at = Date.parse(r.timestamp);
      out.records.push({ label: `recording ${r.id}`, value, ...(Number.isFinite(at) ? { at } : {}) });
    }
    if (page.next_cursor === null || page.next_cursor === cursor || page.steps.length === 0) return out;
    cursor = page.next_cursor;
  }
  out.truncated = true;
  return out;
}

function newRead(): SourceRead {
  return { records: [], skipped: { count: 0, warnings: [] }, truncated: false };
}

function addLine(out: SourceRead, raw: string, lineNumber: number): void {
  const line = raw.trim();
  if (line === '') return;
  try {
    out.records.push({ label: `line ${lineNumber}`, value: JSON.parse(line) as unknown });
  } catch (error) {
    out.skipped.count++;
    if (out.skipped.warnings.length < MAX_WARNINGS) {
      out.skipped.warnings.push(`line ${lineNumber}: skipped, not valid JSON (${error instanceof Error ? error.message : String(error)})`);
    }
  }
}
