// guardctl tui's options: --session is checked as the server checks a session id.
import { describe, expect, it } from 'vitest';
import { parseTuiOptions } from '../../cli/commands/tui.js';
import { UserError } from '../../src/errors.js';

describe('guardctl tui --session', () => {
  it('passes a session id through', () => {
    expect(parseTuiOptions({ session: 'run-8f2c' }, {})).toMatchObject({ session: 'run-8f2c' });
    expect(parseTuiOptions({}, {})).not.toHaveProperty('session');
  });

  it('refuses what the server would refuse, before opening the stream', () => {
    for (const bad of ['', 'x'.repeat(129), 'a\u0000b', 'a\nb']) {
      expect(() => parseTuiOptions({ session: bad }, {})).toThrow(UserError);
    }
  });
});
