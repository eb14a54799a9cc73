import { describe, expect, it } from 'vitest';
import type { Diagnostic } from '../../src/gitops/diagnostics.js';
import { lineOf } from '../../src/reload/reloader.js';

const d = (field: string, message: string): Diagnostic => ({ severity: 'error', file: 'c.yaml', line: 5, column: 14, field, code: 'invalid_config', message, hint: '' });

describe('lineOf (what the server log and the live stream carry)', () => {
  it('names the field path once', () => {
    expect(lineOf(d('evaluator.config.pattern', 'evaluator.config.pattern: pattern must not be empty'))).toBe('c.yaml:5:14 evaluator.config.pattern: pattern must not be empty');
    expect(lineOf(d('scope.stages[0]', 'invalid value "during"'))).toBe('c.yaml:5:14 scope.stages[0]: invalid value "during"');
    expect(lineOf(d('', 'YAML syntax error: bad indentation'))).toBe('c.yaml:5:14: YAML syntax error: bad indentation');
  });
});
