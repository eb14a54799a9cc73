/**
 * Where the `$schema` comment of exported files points: a schema that exists. From the
 * export directory upwards, the first `schema/guardctl.schema.json` (this repository's own
 * copy) or `node_modules/guardctl/schema/guardctl.schema.json` (a project that installed
 * guardctl), as a path relative to the export directory; else the server's own copy at
 * `GET /schema.json`.
 */
import { stat } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';

export const SCHEMA_FILE = 'guardctl.schema.json';
const CANDIDATES = [join('schema', SCHEMA_FILE), join('node_modules', 'guardctl', 'schema', SCHEMA_FILE)];

export function schemaLine(target: string): string {
  return `# yaml-language-server: $schema=${target}`;
}

export async function schemaLineFor(exportDir: string, serverUrl: string): Promise<string> {
  const from = resolve(exportDir);
  for (let dir = from; ; dir = dirname(dir)) {
    for (const candidate of CANDIDATES) {
      const path = join(dir, candidate);
      if (await isFile(path)) return schemaLine(relative(from, path).split(sep).join('/'));
    }
    if (dirname(dir) === dir) break;
  }
  return schemaLine(`${serverUrl.replace(/\/+$/, '')}/schema.json`);
}

async function isFile(path: string): Promise<boolean> {
  return stat(path).then((s) => s.isFile(), () => false);
}
