/** How PostgreSQL's failures reach clients: the store's error kinds (src/store/postgres/errors.ts). */
import { describe, expect, it } from 'vitest';
import { mapPgError } from '../../src/store/postgres/errors.js';
import { StoreError } from '../../src/store/types.js';

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe('mapPgError', () => {
  it('answers a transaction aborted by a deadlock or a serialization failure as unavailable (503, try again), not as a fault', () => {
    for (const [code, message] of [['40P01', 'deadlock detected'], ['40001', 'could not serialize access due to concurrent update']] as const) {
      const mapped = mapPgError(pgError(code, message));
      expect(mapped).toBeInstanceOf(StoreError);
      expect(mapped).toMatchObject({ kind: 'unavailable', message: `database conflict, try again: ${message}` });
    }
  });

  it('keeps the kinds it had: conflict, not found, unavailable, and anything else as it came', () => {
    expect(mapPgError(pgError('23505', 'duplicate key'))).toMatchObject({ kind: 'conflict' });
    expect(mapPgError(pgError('23503', 'foreign key'))).toMatchObject({ kind: 'not_found' });
    expect(mapPgError(pgError('57P01', 'terminating connection'))).toMatchObject({ kind: 'unavailable' });
    const other = pgError('42601', 'syntax error');
    expect(mapPgError(other)).toBe(other);
  });
});
