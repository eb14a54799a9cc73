import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_SQLITE_PATH, openStore, storeTargetOf } from '../../src/store/open-store.js';

const dir = mkdtempSync(join(tmpdir(), 'guardctl-open-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('storeTargetOf', () => {
  it.each([
    ['postgres://u@h:5432/db', { kind: 'postgres', url: 'postgres://u@h:5432/db' }],
    ['postgresql://u@h/db', { kind: 'postgres', url: 'postgresql://u@h/db' }],
    [':memory:', { kind: 'sqlite', path: ':memory:' }],
    ['sqlite::memory:', { kind: 'sqlite', path: ':memory:' }],
    ['sqlite:data/g.db', { kind: 'sqlite', path: 'data/g.db' }],
    ['sqlite://data/g.db', { kind: 'sqlite', path: 'data/g.db' }],
    ['sqlite:///var/g.db', { kind: 'sqlite', path: '/var/g.db' }],
    ['./g.db', { kind: 'sqlite', path: './g.db' }],
    ['/abs/g.db', { kind: 'sqlite', path: '/abs/g.db' }],
  ])('%s', (url, target) => {
    expect(storeTargetOf(url, '/cwd')).toEqual(target);
  });

  it('defaults to .guardctl/guardctl.db in the working directory', () => {
    expect(storeTargetOf(undefined, '/cwd')).toEqual({ kind: 'sqlite', path: join('/cwd', DEFAULT_SQLITE_PATH) });
    expect(storeTargetOf('  ', '/cwd')).toEqual({ kind: 'sqlite', path: join('/cwd', '.guardctl', 'guardctl.db') });
  });

  it('refuses other URL schemes instead of treating them as file names', () => {
    expect(() => storeTargetOf('mysql://h/db')).toThrow(/unsupported database URL/);
  });
});

describe('openStore', () => {
  it('opens the default file under cwd, creating its directory', async () => {
    const store = await openStore(undefined, { cwd: dir });
    expect(store.kind).toBe('sqlite');
    await store.createControl({ name: 'c' });
    await store.close();
    expect(existsSync(join(dir, '.guardctl', 'guardctl.db'))).toBe(true);
  });

  it('opens :memory: and sqlite: URLs', async () => {
    const memory = await openStore(':memory:');
    expect(memory.kind).toBe('sqlite');
    await memory.close();
    const file = await openStore(`sqlite:${join(dir, 'x', 'y.db')}`);
    await file.close();
    expect(existsSync(join(dir, 'x', 'y.db'))).toBe(true);
  });
});
