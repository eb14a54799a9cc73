import { describe, expect, it } from 'vitest';
import { depthExceeds, MAX_JSON_DEPTH } from '../../src/server/json-body.js';

const nested = (depth: number, open = '[', close = ']') => `${open.repeat(depth)}${close.repeat(depth)}`;

describe('depthExceeds', () => {
  it.each([
    ['nesting at the limit', nested(MAX_JSON_DEPTH), false],
    ['nesting one past the limit', nested(MAX_JSON_DEPTH + 1), true],
    ['objects one past the limit', `${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${'}'.repeat(MAX_JSON_DEPTH + 1)}`, true],
    ['many brackets side by side, shallow', `[${'[],'.repeat(5 * MAX_JSON_DEPTH)}[]]`, false],
    ['brackets inside strings, many', JSON.stringify({ text: '[{'.repeat(5 * MAX_JSON_DEPTH) }), false],
    ['an escaped quote does not end the string', JSON.stringify({ text: `\\"${'['.repeat(2 * MAX_JSON_DEPTH)}` }), false],
    ['a string ending in an escaped backslash, then nesting past the limit', `{"a":"x\\\\","b":${nested(MAX_JSON_DEPTH + 1)}}`, true],
    ['many strings with escaped quotes, then nesting past the limit', `[${'"q\\"[{",'.repeat(3 * MAX_JSON_DEPTH)}${nested(MAX_JSON_DEPTH)}]`, true],
    ['many small objects side by side (an events batch)', JSON.stringify({ events: Array.from({ length: 1000 }, (_, i) => ({ id: `e-${i}`, m: { k: [i] } })) }), false],
    ['an unterminated string after many brackets', `[${'{},'.repeat(2 * MAX_JSON_DEPTH)}"[[[`, false],
    ['an ordinary request body', JSON.stringify({ agent_name: 'a', stage: 'pre', step: { type: 'tool', name: 'x', input: { q: [1, 2, { z: [] }] } } }), false],
  ])('%s', (_what, text, expected) => {
    expect(depthExceeds(text, MAX_JSON_DEPTH)).toBe(expected);
  });
});
