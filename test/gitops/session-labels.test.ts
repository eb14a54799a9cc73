/**
 * Session labels in a controls directory: a label required in a scope that no control
 * adds is refused at file:line:col (a typo that would silently turn a deny off);
 * execution: sdk controls that add or require labels, or count repeats, are refused.
 */
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments, type SourceFile } from '../../src/gitops/load.js';

const load = (files: SourceFile[]) => loadDocuments(files, { validateControl: controlValidator(createDefaultRegistry()) });

const marker = `kind: Control
name: mark-untrusted
scope: { step_names: [fetch_url], stages: [post] }
selector: { path: name }
evaluator: { name: regex, config: { pattern: . } }
action: { decision: log, session_labels: [untrusted_content] }
`;

const blocker = (labels: string, execution = 'server') => `kind: Control
name: block-exfiltration
execution: ${execution}
scope:
  step_names: [send_email]
  session_labels: ${labels}
selector: { path: name }
evaluator: { name: regex, config: { pattern: . } }
action: { decision: deny }
`;

describe('session labels in a directory', () => {
  it('accepts a required label that another file adds', () => {
    const result = load([{ path: 'mark.yaml', text: marker }, { path: 'block.yaml', text: blocker('[untrusted_content]') }]);
    expect(result.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  });

  it('refuses a required label no control adds, at its file:line:col, with the near name', () => {
    const result = load([{ path: 'mark.yaml', text: marker }, { path: 'block.yaml', text: blocker('[untrusted_content, untrusted_contnet]') }]);
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    expect(errors).toEqual([
      expect.objectContaining({
        code: 'session_label_never_added',
        file: 'block.yaml',
        line: 6,
        column: 39,
        message: expect.stringContaining('"untrusted_contnet"'),
        hint: 'did you mean "untrusted_content"?',
      }),
    ]);
  });

  it.each([
    ['in shadow mode', marker.replace('name: mark-untrusted', 'name: mark-untrusted\nmode: shadow')],
    ['disabled', marker.replace('name: mark-untrusted', 'name: mark-untrusted\nenabled: false')],
  ])('warns at its file:line:col of a required label only a control %s adds (it adds none)', (_how, text) => {
    const result = load([{ path: 'mark.yaml', text }, { path: 'block.yaml', text: blocker('[untrusted_content]') }]);
    expect(result.diagnostics.filter((d) => d.code === 'session_label_never_marked')).toEqual([
      expect.objectContaining({ severity: 'warning', file: 'block.yaml', line: 6, message: expect.stringContaining('"untrusted_content" is added only by controls that are disabled or in shadow mode') }),
    ]);
  });

  it('refuses labels on execution: sdk controls with the reason', () => {
    const result = load([{ path: 'mark.yaml', text: marker }, { path: 'block.yaml', text: blocker('[untrusted_content]', 'sdk') }]);
    const errors = result.diagnostics.filter((d) => d.severity === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/scope\.session_labels: session labels are server state.*execution: server/);
    const adds = load([{ path: 'mark.yaml', text: marker.replace('name: mark-untrusted', 'name: mark-untrusted\nexecution: sdk') }]);
    expect(adds.diagnostics.filter((d) => d.severity === 'error').map((d) => d.message).join()).toMatch(/action\.session_labels: session labels are server state/);
  });

  it('refuses repeat on execution: sdk', () => {
    const text = `kind: Control
name: loop
execution: sdk
selector: { path: input }
evaluator: { name: repeat, config: { max: 3, window: 10m } }
action: { decision: deny }
`;
    const errors = load([{ path: 'loop.yaml', text }]).diagnostics.filter((d) => d.severity === 'error');
    expect(errors.map((d) => d.message).join()).toMatch(/repeat evaluator counts steps .* execution: server/);
  });

  it('refuses malformed labels and session fields', () => {
    const result = load([{ path: 'block.yaml', text: blocker('[Untrusted Content]') }]);
    expect(result.diagnostics.filter((d) => d.severity === 'error').map((d) => d.message).join()).toMatch(/a session label is 1-64 characters/);
  });
});
