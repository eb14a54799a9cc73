import { describe, expect, it } from 'vitest';
import { ControlDataSchema } from '../../../src/model/index.js';
import { plan } from '../../../src/gitops/plan.js';
import { colors } from '../../../cli/output/color.js';
import { MARKDOWN_LIMIT, renderPlanJson, renderPlanMarkdown, renderPlanText } from '../../../cli/output/plan.js';

const data = (pattern: string) =>
  ControlDataSchema.parse({ selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern } }, action: { decision: 'deny' } });
const ctx = { directory: 'controls', server: 'http://s', fingerprint: 'sha256:abcdef0123456789abcdef' };
const actual = {
  controls: [
    { control_id: 1, name: 'changed', enabled: true, data: data('old'), managed_by: 'gitops:default', source: null },
    { control_id: 2, name: 'dropped', enabled: true, data: data('d'), managed_by: 'gitops:default', source: null },
    { control_id: 3, name: 'hand', enabled: true, data: data('h'), managed_by: null, source: null },
  ],
  agents: [{ agent_name: 'bot', agent_description: null, agent_version: null, steps: [], metadata: null, controls: ['dropped'] }],
};
const desired = {
  controls: [
    { name: 'changed', data: data('new'), source: null },
    { name: 'fresh', data: data('f'), source: null },
    { name: 'hand', data: data('mine'), source: null },
  ],
  agents: [{ agent_name: 'bot', fields: {}, controls: ['fresh'] }],
};
const p = plan(desired, actual, { prune: true });

describe('plan renderers', () => {
  it('text: one symbol per operation, the field diff under updates, conflicts, and a summary', () => {
    const lines = renderPlanText(p, ctx, colors(false)).split('\n');
    expect(lines).toContain('  + create control "fresh" (deny, regex on input)');
    expect(lines).toContain('  ~ update control "changed"');
    expect(lines).toContain('      evaluator.config.pattern: "old" -> "new"');
    expect(lines).toContain('  - unlink agent "bot" -> control "dropped"');
    expect(lines).toContain('  + link agent "bot" -> control "fresh"');
    expect(lines).toContain('  - delete control "dropped" (gitops:default)');
    expect(lines.some((l) => l.includes('! conflict: control "hand"'))).toBe(true);
    expect(lines).toContain('Plan: 1 to create, 1 to update, 1 to delete, 0 agent changes, 1 to link, 1 to unlink, 1 conflict.');
  });

  it('text: a delete a kept policy would make the server refuse is a conflict naming the policy', () => {
    const bound = plan(desired, { ...actual, policies: [{ name: 'by-hand', description: null, controls: ['dropped'], agents: { names: ['bot'] }, source: null, managed_by: null }] }, { prune: true });
    const lines = renderPlanText(bound, ctx, colors(false)).split('\n');
    expect(lines).toContain('  - delete control "dropped" (gitops:default)');
    expect(lines).toContain('  ! conflict: delete control "dropped": bound by policy "by-hand", which the plan keeps; the server refuses the delete');
    expect(bound.summary.conflicts).toBe(2);
  });

  it('text: says so when nothing changes', () => {
    const none = plan({ controls: [], agents: [] }, { controls: [], agents: [] });
    expect(renderPlanText(none, ctx, colors(false))).toContain('No changes: the server matches the directory.');
  });

  it('json: a stable shape', () => {
    const json = JSON.parse(renderPlanJson(p, ctx));
    expect(Object.keys(json)).toEqual(['version', 'changes', 'directory', 'server', 'fingerprint', 'managed_by', 'summary', 'operations', 'conflicts', 'kept', 'refusal', 'promotions']);
    expect(json.summary).toMatchObject({ create_control: 1, update_control: 1, delete_control: 1, link: 1, unlink: 1, conflicts: 1, total: 5 });
  });

  it('markdown: summary table first, details collapsed in a diff block', () => {
    const md = renderPlanMarkdown(p, ctx);
    const table = md.indexOf('| controls | 1 | 1 | 1 | | | 1 |');
    expect(table).toBeGreaterThan(0);
    expect(md.indexOf('<details>')).toBeGreaterThan(table);
    expect(md).toContain('```diff\n+ create control "fresh"');
    expect(md).toContain('</details>');
  });

  it('markdown: a huge plan is cut below the limit with a note', () => {
    const many = {
      controls: Array.from({ length: 3000 }, (_, i) => ({ name: `control-number-${i}-with-a-long-name`, data: data(`p${i}`), source: null })),
      agents: [],
    };
    const md = renderPlanMarkdown(plan(many, { controls: [], agents: [] }), ctx);
    expect(md.length).toBeLessThan(MARKDOWN_LIMIT);
    expect(md).toMatch(/Truncated: \d+ of 3000 lines left out/);
    expect(md.indexOf('</details>')).toBeGreaterThan(0);
  });

  describe('a control promoted from shadow to enforce', () => {
    const shadowData = ControlDataSchema.parse({ ...data('x'), mode: 'shadow' });
    const promoted = plan(
      { controls: [{ name: 'block-pii-in-output', data: data('x'), source: null }], agents: [] },
      { controls: [{ control_id: 4, name: 'block-pii-in-output', enabled: true, data: shadowData, managed_by: 'gitops:default', source: null }], agents: [] },
    );
    const promotions = [
      { name: 'block-pii-in-output', control_id: 4, decision: 'deny' as const, figures: { time_range: '24h' as const, evaluated: 10_412, matched: 37, would_deny: 37, would_steer: 0 } },
    ];
    const withFigures = { ...ctx, promotions };
    const line = 'would have denied 37 of 10,412 steps in the last 24 h';

    it('text: the mode line carries the server figures', () => {
      const lines = renderPlanText(promoted, withFigures, colors(false)).split('\n');
      expect(lines).toContain('  ~ update control "block-pii-in-output"');
      expect(lines).toContain(`      mode: shadow -> enforce (${line})`);
    });

    it('json: the promotions with their figures', () => {
      expect(JSON.parse(renderPlanJson(promoted, withFigures)).promotions).toEqual(promotions);
    });

    it('markdown: the promotion line outside the collapsed details, and in them', () => {
      const md = renderPlanMarkdown(promoted, withFigures);
      const outside = md.indexOf(`~ block-pii-in-output: mode shadow -> enforce (${line})`);
      expect(outside).toBeGreaterThan(0);
      expect(outside).toBeLessThan(md.indexOf('<details>'));
      expect(md).toContain(`    mode: shadow -> enforce (${line})`);
    });

    it('without promotions the mode change is an ordinary field diff', () => {
      expect(renderPlanText(promoted, ctx, colors(false))).toContain('      mode: "shadow" -> (unset)');
    });
  });
});
