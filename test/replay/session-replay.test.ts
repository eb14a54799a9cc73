// Recorded sessions replay in order: each side keeps the labels its own controls add, so a
// change that adds (or drops) a label shows up at the session's later steps.
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import type { ControlData } from '../../src/model/index.js';
import { compileReplaySides, replay, type RawRecord } from '../../src/replay/index.js';

const registry = createDefaultRegistry();
const onTool = (tool: string, action: ControlData['action'], scope: Partial<ControlData['scope']> = {}): ControlData => ({
  enabled: true,
  execution: 'server',
  scope: { step_names: [tool], ...scope },
  selector: { path: 'name' },
  evaluator: { name: 'regex', config: { pattern: '.' } },
  action,
});

const deny = onTool('send_email', { decision: 'deny' }, { session_labels: ['untrusted_content'] });
const mark = onTool('fetch_url', { decision: 'log', session_labels: ['untrusted_content'] });

const rec = (label: string, tool: string, session?: string): RawRecord => ({
  label,
  value: { agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: tool, input: {} }, ...(session ? { session_id: session } : {}) },
});

describe('replay of recorded sessions', () => {
  it('replays a session in order: the deny needs the marker of an earlier step, on the side that has it', async () => {
    // Before: only the deny (nothing marks sessions). After: the marker too.
    const sides = compileReplaySides(
      { controls: [{ name: 'deny-exfiltration', data: deny }], agents: [{ agent_name: 'bot', controls: ['deny-exfiltration'] }] },
      { controls: [{ name: 'deny-exfiltration', data: deny }, { name: 'mark', data: mark }], agents: [{ agent_name: 'bot', controls: ['deny-exfiltration', 'mark'] }] },
      registry,
    );
    const records = [rec('r1', 'send_email', 's1'), rec('r2', 'fetch_url', 's1'), rec('r3', 'send_email', 's1'), rec('r4', 'send_email', 's2'), rec('r5', 'send_email')];
    const report = await replay(records, sides.before, sides.after, { common: sides.common });
    expect(report.evaluated).toBe(5);
    expect(report.changes.map((c) => [c.from, c.to, c.count, c.controls])).toEqual([['allow', 'deny', 1, { 'deny-exfiltration': 1 }]]);
    expect(report.changes[0]!.examples.map((e) => e.label)).toEqual(['r3']);
  });
});
