/**
 * A json or sql config that cannot work is refused wherever a control comes in, with the
 * field path: the YAML loader (validate, plan, apply and hot reload load through it) at
 * file:line:col, POST /controls/validate and PUT (422), and a hot reload (nothing written).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments } from '../../src/gitops/load.js';
import { createReloader } from '../../src/reload/index.js';
import { ControlSetCache } from '../../src/server/control-sets.js';
import { openStore } from '../../src/store/open-store.js';
import { compileControls, type CompiledControlSet } from '../../src/engine/index.js';
import { call, json, startTestServer } from '../server/helpers.js';
import { tempControlsDir, writeIn } from '../reload/helpers.js';

const doc = (evaluator: string) => `kind: Control
name: guard
selector: { path: input.query }
evaluator:
${evaluator}
action: { decision: deny }
`;

/** [what, evaluator YAML (indented), field, line, column, message]. */
const BAD: Array<[string, string, string, number, number, RegExp]> = [
  ['an unknown operation', '  name: sql\n  config:\n    blocked_operations: [drop, destroy]', 'evaluator.config.blocked_operations[1]', 7, 32, /drop|select/],
  ['blocked and allowed operations together', '  name: sql\n  config:\n    blocked_operations: [drop]\n    allowed_operations: [select]', 'evaluator.config.allowed_operations', 8, 5, /not both/],
  ['blocked and allowed tables together', '  name: sql\n  config:\n    blocked_tables: [a]\n    allowed_tables: [b]', 'evaluator.config.allowed_tables', 8, 5, /not both/],
  ['a JSON Schema with a wrong type name', '  name: json\n  config:\n    schema:\n      type: obj', 'evaluator.config.schema.type', 8, 13, /not a valid JSON Schema/],
  ['a JSON Schema with an unknown keyword', '  name: json\n  config:\n    schema: { type: integer, maximun: 3 }', 'evaluator.config.schema', 7, 5, /unknown keyword: "maximun"/],
  ['a JSON Schema that refers to itself', "  name: json\n  config:\n    schema: { $ref: '#' }", 'evaluator.config.schema', 7, 5, /refers back to itself .*could never finish/],
  ['a $def that refers to itself', "  name: json\n  config:\n    schema:\n      $defs:\n        a: { allOf: [{ $ref: '#/$defs/a' }] }", 'evaluator.config.schema.$defs.a', 9, 9, /could never finish/],
];

describe('bad json and sql configs in YAML: file:line:col and the field', () => {
  const load = (text: string) => loadDocuments([{ path: 'c.yaml', text }], { validateControl: controlValidator(createDefaultRegistry()) });
  it.each(BAD)('%s', (_what, evaluator, field, line, column, message) => {
    const errors = load(doc(evaluator)).diagnostics.filter((d) => d.severity === 'error');
    const d = errors.find((e) => e.field === field);
    expect(d, JSON.stringify(errors)).toBeDefined();
    expect(d).toMatchObject({ file: 'c.yaml', line, column });
    expect(d!.message).toMatch(message);
  });
});

describe('bad json and sql configs over HTTP: 422 with the data. field path, nothing stored', () => {
  const bodies: Array<[string, Record<string, unknown>, string]> = [
    ['unknown operation', { name: 'sql', config: { blocked_operations: ['destroy'] } }, 'data.evaluator.config.blocked_operations[0]'],
    ['both lists', { name: 'sql', config: { blocked_tables: ['a'], allowed_tables: ['b'] } }, 'data.evaluator.config.allowed_tables'],
    ['schema that does not compile', { name: 'json', config: { schema: { $ref: '#/nowhere' } } }, 'data.evaluator.config.schema'],
    ['schema that refers to itself', { name: 'json', config: { schema: { $ref: '#' } } }, 'data.evaluator.config.schema'],
  ];
  it.each(bodies)('%s', async (_what, evaluator, field) => {
    const server = await startTestServer();
    try {
      const data = { selector: { path: 'input.query' }, evaluator, action: { decision: 'deny' } };
      const validated = await call(server.app, 'POST', '/api/v1/controls/validate', { data });
      expect(JSON.stringify(json(validated))).toContain(field);
      const put = await call(server.app, 'PUT', '/api/v1/controls', { name: 'bad', data });
      expect(put.statusCode).toBe(422);
      expect(json(put).errors.map((e: { field: string }) => e.field)).toContain(field);
      expect(json(await call(server.app, 'GET', '/api/v1/controls')).pagination.total).toBe(0);
    } finally {
      await server.close();
    }
  });
});

describe('a bad sql config on hot reload', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0)) await fn();
  });

  it('fails the reload naming the file and field, writes nothing and keeps the last good set', async () => {
    const good = doc('  name: sql\n  config: { blocked_operations: [drop] }');
    const { root, dir } = tempControlsDir({ 'c.yaml': `${good}---\nkind: Agent\nagent_name: bot\ncontrols: [guard]\n` });
    const store = await openStore(':memory:');
    cleanups.push(async () => {
      await store.close();
      rmSync(root, { recursive: true, force: true });
    });
    const registry = createDefaultRegistry();
    const cache = new ControlSetCache<CompiledControlSet>(store, (controls) =>
      compileControls(controls.map((c) => ({ control_id: c.control_id, name: c.name, data: c.data })), registry),
    );
    const reloader = createReloader({ dir, store, controlSets: cache, registry });
    expect((await reloader.reloadNow()).result).toBe('success');
    const revision = await store.revision();
    writeIn(dir, 'c.yaml', `${doc('  name: sql\n  config: { blocked_operations: [drop, nuke] }')}---\nkind: Agent\nagent_name: bot\ncontrols: [guard]\n`);
    const failed = await reloader.reloadNow();
    expect(failed.result).toBe('failure');
    expect(failed.diagnostics.some((d) => d.file === join(dir, 'c.yaml') && d.field === 'evaluator.config.blocked_operations[1]')).toBe(true);
    expect(await store.revision()).toBe(revision);
  });
});
