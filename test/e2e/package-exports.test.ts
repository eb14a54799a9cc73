import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import * as lib from '../../src/index.js';

describe('package entry points', () => {
  it('exports the library pieces from "guardctl"', () => {
    for (const name of ['buildApp', 'startServer', 'loadConfig', 'openStore', 'compileControls', 'evaluateStep', 'validateControlData', 'createDefaultRegistry', 'GuardClient']) {
      expect(typeof (lib as Record<string, unknown>)[name], name).toBe('function');
    }
    expect(lib.ControlDataSchema.safeParse({ selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern: 'x' } }, action: { decision: 'deny' } }).success).toBe(true);
  });

  it('resolves "guardctl" and "guardctl/sdk" through package.json exports (the built files)', () => {
    const out = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', "const a = await import('guardctl'); const s = await import('guardctl/sdk'); console.log(typeof a.buildApp, typeof s.init, typeof s.ControlViolationError)"],
      { cwd: new URL('../..', import.meta.url), encoding: 'utf8' },
    );
    expect(out.trim()).toBe('function function function');
  });

  it('resolves each adapter subpath', () => {
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const a = await import('guardctl/ai-sdk'); const l = await import('guardctl/langchain'); const o = await import('guardctl/openai-agents'); const m = await import('guardctl/mcp');" +
          'console.log(typeof a.guardTools, typeof a.guardModel, typeof l.guardTool, typeof l.guardTools, typeof o.guardrailsFor, typeof m.startMcpProxy)',
      ],
      { cwd: new URL('../..', import.meta.url), encoding: 'utf8' },
    );
    expect(out.trim()).toBe('function function function function function function');
  });
});
