// Export writes every field the YAML format has: a directory setting every field of every
// kind the server keeps is applied, exported, loaded back and planned: no changes. The
// fields are read from the model's zod schemas, so a new field the fixture (and export)
// lacks fails here.
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import type { GuardClient } from '../../src/client/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDirectory } from '../../src/gitops/directory.js';
import { exportState } from '../../src/gitops/export.js';
import { fetchActualState } from '../../src/gitops/fetch-state.js';
import { loadDocuments, type LoadResult } from '../../src/gitops/load.js';
import { applyToServer, planAgainstServer } from '../../src/gitops/sync.js';
import { AgentDocumentSchema, ControlDocumentSchema, PolicyDocumentSchema } from '../../src/model/index.js';
import { readFileSync } from 'node:fs';
import { serverPerTest } from './server.js';

const fixture = join(import.meta.dirname, '../fixtures/every-field');

/** Every key path a schema accepts (`a.b`, `a[].b`), open records (config, metadata) not entered. */
function schemaPaths(schema: z.ZodType, prefix = '', seen = new Set<z.ZodType>()): string[] {
  if (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable || schema instanceof z.ZodDefault) {
    return schemaPaths(schema.unwrap() as z.ZodType, prefix, seen);
  }
  if (schema instanceof z.ZodPipe) return schemaPaths(schema.in as z.ZodType, prefix, seen);
  if (schema instanceof z.ZodLazy) {
    // A recursive schema (conditions) is walked once: its nested copies have the same keys.
    if (seen.has(schema)) return [];
    return schemaPaths(schema.unwrap() as z.ZodType, prefix, new Set([...seen, schema]));
  }
  if (schema instanceof z.ZodUnion) return (schema.options as z.ZodType[]).flatMap((o) => schemaPaths(o, prefix, seen));
  if (schema instanceof z.ZodArray) return schemaPaths(schema.element as z.ZodType, `${prefix}[]`, seen);
  if (schema instanceof z.ZodObject) {
    return Object.entries(schema.shape as Record<string, z.ZodType>).flatMap(([key, child]) => {
      const path = prefix ? `${prefix}.${key}` : key;
      return [path, ...schemaPaths(child, path, seen)];
    });
  }
  return [];
}

/** Every key path present in plain data, condition trees folded the way schemaPaths folds them. */
function dataPaths(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v) => dataPaths(v, `${prefix}[]`));
  if (value === null || typeof value !== 'object') return [];
  if (/(^|\.)(config|metadata|input_schema|output_schema)$/.test(prefix)) return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    return [path, ...dataPaths(child, path)];
  });
}

/** Condition subtrees repeat the condition's own keys: `condition.and[].or[].not.selector` -> `condition.selector`. */
const folded = (path: string) => path.replace(/^condition((\.(and|or)\[\])|\.not)+\./, 'condition.');

let client: GuardClient;

serverPerTest((_server, c) => {
  client = c;
});

describe('export round trip', () => {
  it('the fixture sets every field of every kind the server keeps', () => {
    const docs = parseAllDocuments(readFileSync(join(fixture, 'controls.yaml'), 'utf8')).map((d) => d.toJS() as Record<string, unknown>);
    const present = (kind: string) => new Set(docs.filter((d) => d.kind === kind).flatMap((d) => dataPaths(d)).map(folded));
    for (const [kind, schema] of [['Control', ControlDocumentSchema], ['Agent', AgentDocumentSchema], ['Policy', PolicyDocumentSchema]] as const) {
      const have = present(kind);
      const missing = [...new Set(schemaPaths(schema).map(folded))].filter((path) => !have.has(path));
      expect(missing, `fields of kind ${kind} the fixture ${fixture} does not set`).toEqual([]);
    }
  });

  it('apply, export, load the export, plan: no changes, and the data is the same', async () => {
    const registry = createDefaultRegistry();
    const loaded = await loadDirectory(fixture, registry);
    expect(loaded.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect((await applyToServer(client, await planAgainstServer(client, loaded, {}))).failed).toBeNull();

    const exported = exportState(await fetchActualState(client));
    const back = loadDocuments(exported.files, { validateControl: controlValidator(registry) });
    expect(back.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect((await planAgainstServer(client, back, {})).plan.operations).toEqual([]);
    const byName = (l: LoadResult) => Object.fromEntries(l.controls.map((c) => [c.name, c.data]));
    expect(byName(back)).toEqual(byName(loaded));
    // Links are a set: export lists them sorted.
    const agents = (l: LoadResult) => l.agents.map((a) => ({ ...a.document, controls: [...a.document.controls].sort() }));
    expect(agents(back)).toEqual(agents(loaded));
    expect(back.policies.map((p) => p.document)).toEqual(loaded.policies.map((p) => p.document));
  });
});
