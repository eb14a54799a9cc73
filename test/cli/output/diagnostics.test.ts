import { describe, expect, it } from 'vitest';
import type { Diagnostic } from '../../../src/gitops/diagnostics.js';
import { colors } from '../../../cli/output/color.js';
import { codeFrame, renderDiagnosticsGithub, renderDiagnosticsJson, renderDiagnosticsText } from '../../../cli/output/diagnostics.js';

const source = 'kind: Control\nname: x\nscope:\n  step_typez: [tool]\n';
const d: Diagnostic = {
  severity: 'error', file: 'controls/a.yaml', line: 4, column: 3, endLine: 4, endColumn: 13,
  field: 'scope.step_typez', message: 'scope.step_typez: unknown field "step_typez"', hint: 'remove it', code: 'unknown_field',
};
const w: Diagnostic = { ...d, severity: 'warning', line: 2, column: 7, endColumn: 8, code: 'unlinked_control', message: 'control "x" is linked to no agent', field: 'name', hint: 'link it' };

describe('diagnostic renderers', () => {
  it('text: location, message, the source line with a caret under the column, then the hint', () => {
    const text = renderDiagnosticsText([d], new Map([['controls/a.yaml', source]]), colors(false));
    const lines = text.split('\n');
    expect(lines[0]).toBe('controls/a.yaml:4:3 error scope.step_typez: unknown field "step_typez" [unknown_field]');
    expect(lines).toContain('  4 |   step_typez: [tool]');
    expect(lines).toContain('    |   ^^^^^^^^^^');
    expect(lines).toContain('  hint: remove it');
    expect(text).toContain('✗ 1 error, 0 warnings');
    expect(text).not.toContain('\u001b[');
  });

  it('text: colour only when asked', () => {
    expect(renderDiagnosticsText([d], new Map(), colors(true))).toContain('\u001b[31m');
  });

  it('code frame survives a line past the end of the text', () => {
    expect(codeFrame('a\n', { line: 9, column: 1 }, colors(false))).toBeNull();
  });

  it('json: a stable shape with counts', () => {
    const json = JSON.parse(renderDiagnosticsJson([d, w], { directory: 'controls' }));
    expect(json).toMatchObject({ version: 1, valid: false, errors: 1, warnings: 1, directory: 'controls' });
    expect(json.diagnostics[0]).toEqual(d);
  });

  it('github: workflow annotations with file, line and col, and escaped data', () => {
    const out = renderDiagnosticsGithub([d, { ...w, message: 'a, b: 50%\nnext' }]).split('\n');
    expect(out[0]).toBe(
      '::error file=controls/a.yaml,line=4,col=3,endLine=4,endColumn=13,title=guardctl unknown_field::scope.step_typez: unknown field "step_typez"%0Aremove it',
    );
    expect(out[1]).toMatch(/^::warning file=controls\/a.yaml,line=2,col=7,.*::a, b: 50%25%0Anext%0Alink it$/);
  });
});
