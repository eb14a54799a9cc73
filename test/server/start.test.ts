import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventWriterPathOf } from '../../src/server/assemble.js';

describe('eventWriterPathOf', () => {
  it.each([
    ['a SQLite file, observability on', 'data/g.db', true, 'data/g.db'],
    ['a SQLite file, observability off: no idle thread', 'data/g.db', false, undefined],
    ['PostgreSQL', 'postgres://db/guard', true, undefined],
  ] as const)('%s', (_, databaseUrl, observabilityEnabled, path) => {
    expect(eventWriterPathOf({ databaseUrl, observabilityEnabled })).toBe(path);
  });

  it('gives the default SQLite file when no URL is set', () => {
    expect(eventWriterPathOf({ databaseUrl: undefined, observabilityEnabled: true })).toBe(join(process.cwd(), '.guardctl', 'guardctl.db'));
  });
});
