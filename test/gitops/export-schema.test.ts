// Exported files point editors at a schema that exists: the repository's copy (a relative
// path) when there is one above the export, else the server's own GET /schema.json.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportState } from '../../src/gitops/export.js';
import { documentJsonSchema } from '../../src/gitops/json-schema.js';
import { schemaLineFor } from '../../src/gitops/schema-location.js';
import type { ServerHandle } from '../../src/server/start.js';
import { startTestServer } from './server.js';

const repo = join(import.meta.dirname, '../..');
let server: ServerHandle;
let outside: string;
beforeAll(async () => {
  server = await startTestServer();
  outside = mkdtempSync(join(tmpdir(), 'guardctl-export-schema-'));
});
afterAll(async () => {
  await server.close();
  rmSync(outside, { recursive: true, force: true });
});

const target = (line: string) => /\$schema=(\S+)$/.exec(line)?.[1];

describe('the $schema of exported files', () => {
  it('is never a URL that does not exist', () => {
    const state = { controls: [], agents: [{ agent_name: 'a', agent_description: null, agent_version: null, steps: [], metadata: null, controls: [] }] };
    expect(exportState(state).files[0]!.text).not.toMatch(/unpkg\.com/);
    expect(JSON.stringify(documentJsonSchema())).not.toMatch(/unpkg\.com/);
  });

  it('inside the repository: the relative path to schema/guardctl.schema.json, which exists from the export directory', async () => {
    const dir = join(repo, 'test', 'fixtures', 'every-field', 'exported-here');
    const line = await schemaLineFor(dir, server.url);
    const path = target(line)!;
    expect(path).toBe('../../../../schema/guardctl.schema.json');
    expect(existsSync(resolve(dir, path))).toBe(true);
  });

  it('in a project that installed guardctl: the copy in node_modules', async () => {
    const project = join(outside, 'project');
    mkdirSync(join(project, 'node_modules', 'guardctl', 'schema'), { recursive: true });
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(project, 'node_modules', 'guardctl', 'schema', 'guardctl.schema.json'), '{}');
    expect(target(await schemaLineFor(join(project, 'controls'), server.url))).toBe('../node_modules/guardctl/schema/guardctl.schema.json');
  });

  it('elsewhere: the server\'s own schema, which it serves without a key', async () => {
    const dir = join(outside, 'loose', 'exported');
    const line = await schemaLineFor(dir, server.url);
    expect(target(line)).toBe(`${server.url}/schema.json`);
    const answer = await fetch(target(line)!);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual(documentJsonSchema());
    expect(dirname(dir)).not.toBe(dir);
  });
});
