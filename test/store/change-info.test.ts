import { describe, expect, it } from 'vitest';
import { changeInfoOf } from '../../src/store/postgres/change-listener.js';

describe('changeInfoOf (PostgreSQL change notification payloads)', () => {
  it.each([
    ['the revision and the agents', '{"revision":42,"agents":["a","b"]}', { agents: ['a', 'b'], revision: 42 }],
    ['the revision and any agent', '{"revision":7,"agents":"*"}', { agents: null, revision: 7 }],
    ['an agent list (earlier versions)', '["a"]', { agents: ['a'] }],
    ['any agent (earlier versions)', '"*"', { agents: null }],
    ['a revision that is not an integer', '{"revision":"7","agents":["a"]}', { agents: ['a'] }],
    ['something unreadable', 'not json', { agents: null }],
    ['nothing', undefined, { agents: null }],
  ])('reads %s', (_what, payload, expected) => {
    expect(changeInfoOf(payload)).toEqual(expected);
  });
});
