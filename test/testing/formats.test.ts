import { describe, expect, it } from 'vitest';
import { colors } from '../../cli/output/color.js';
import { renderTestGithub } from '../../cli/output/test-github.js';
import { renderTestJson } from '../../cli/output/test-json.js';
import { renderTestJunit } from '../../cli/output/test-junit.js';
import { renderTestText } from '../../cli/output/test-text.js';
import { runOn, testDoc } from './helpers.js';

const plain = colors(false);
// One pass, one wrong decision (with a name full of XML and annotation specials), one unknown control.
const YAML = testDoc(`  - name: drop is denied
    stage: pre
    step: { type: tool, name: run_sql, input: { query: DROP TABLE x } }
    expect: { decision: deny, matched: [no-drop] }
  - name: 'select <b>&</b> "quoted", 50%: denied?'
    stage: pre
    step: { type: tool, name: run_sql, input: { query: SELECT 1 } }
    expect: { decision: deny, matched: [no-drop] }
  - name: typo
    stage: pre
    step: { type: tool, name: run_sql, input: {} }
    expect: { decision: allow, matched: [no-dorp] }
`);

describe('test report formats', () => {
  it('text: the failure with expected vs actual, the diagnostic with its position, coverage and summary', async () => {
    const out = renderTestText(await runOn(YAML), new Map([['tests.yaml', YAML]]), plain);
    expect(out).toContain('tests.yaml:9:5 FAIL suite › select <b>&</b> "quoted", 50%: denied?');
    expect(out).toContain('  decision: expected deny, got allow');
    expect(out).toContain('  expected "no-drop" to match; it did not');
    expect(out).toContain('  decided by: (no deny or steer control matched)');
    expect(out).toMatch(/tests\.yaml:16:42 error case "typo" names control "no-dorp"/);
    expect(out).toContain('Coverage: 1 of 5 controls exercised; never matched: log-email, other-agents-control, steer-prod, unused-deny');
    expect(out.trimEnd().split('\n').at(-1)).toBe('✗ 1 passed, 1 failed, 1 invalid (2 cases in 1 test document)');
    expect(out).not.toContain('drop is denied');
  });

  it('json: a stable, versioned shape', async () => {
    const body = JSON.parse(renderTestJson(await runOn(YAML))) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['version', 'directory', 'passed', 'summary', 'coverage', 'cases', 'diagnostics']);
    expect(body).toMatchObject({
      version: 1,
      passed: false,
      summary: { documents: 1, total: 2, passed: 1, failed: 1, invalid: 1 },
      coverage: { total: 5, exercised: ['no-drop'] },
    });
    const cases = body.cases as Array<Record<string, unknown>>;
    expect(cases[1]).toMatchObject({
      test: 'suite', agent: 'bot', passed: false, file: 'tests.yaml', line: 9, column: 5,
      expected: { decision: 'deny', matched: ['no-drop'], not_matched: [] },
      actual: { decision: 'allow', matched: [], deciding: [], errors: [] },
      missing_matched: ['no-drop'], unexpected_matched: [],
    });
    expect((body.diagnostics as Array<Record<string, unknown>>)[0]).toMatchObject({ code: 'unknown_control', line: 16, column: 42 });
  });

  it('github: one ::error per failure and diagnostic, escaped, and a coverage warning', async () => {
    const out = renderTestGithub(await runOn(YAML));
    const lines = out.trimEnd().split('\n');
    expect(lines.filter((l) => l.startsWith('::error '))).toHaveLength(2);
    const failure = lines.find((l) => l.includes('test failed'))!;
    expect(failure).toMatch(/^::error file=tests\.yaml,line=9,col=5,title=test failed%3A suite › select <b>&<\/b> "quoted"%2C 50%25%3A denied\?::expected deny, got allow%0A/);
    expect(lines.some((l) => l.startsWith('::error file=tests.yaml,line=16,col=42'))).toBe(true);
    expect(lines.some((l) => l.startsWith('::warning::Coverage: 1 of 5'))).toBe(true);
  });

  it('junit: well-formed XML with one testsuite per document, failures and errors, escaped', async () => {
    const xml = renderTestJunit(await runOn(YAML));
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="guardctl test" tests="3" failures="1" errors="1">')).toBe(true);
    expect(xml).toContain('<testsuite name="suite" tests="2" failures="1" errors="0" file="tests.yaml">');
    expect(xml).toContain('<testcase name="drop is denied" classname="bot.suite" file="tests.yaml" line="5"/>');
    expect(xml).toContain('<testcase name="select &lt;b&gt;&amp;&lt;/b&gt; &quot;quoted&quot;, 50%: denied?"');
    expect(xml).toContain('<failure message="expected deny, got allow" type="decision">');
    expect(xml).toContain('<error message="case &quot;typo&quot; names control &quot;no-dorp&quot;, which no kind: Control document defines" type="unknown_control">');
    expect(checkXml(xml)).toEqual({ ok: true, root: 'testsuites', testcases: 3 });
  });
});

/** A small well-formedness check: tags balance, attributes are quoted, no raw & or <. */
function checkXml(xml: string): { ok: boolean; root: string; testcases: number } {
  const body = xml.replace(/^<\?xml[^?]*\?>\s*/, '');
  const stack: string[] = [];
  let root = '';
  let testcases = 0;
  const token = /<(\/?)([A-Za-z_][\w.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let m: RegExpExecArray | null;
  let consumed = 0;
  while ((m = token.exec(body)) !== null) {
    consumed = token.lastIndex;
    if (m[5] !== undefined) {
      if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(m[5])) return { ok: false, root, testcases };
      continue;
    }
    const [, closing, name, attrs, selfClosing] = m;
    if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(attrs ?? '')) return { ok: false, root, testcases };
    if (name === 'testcase' && !closing) testcases++;
    if (closing) {
      if (stack.pop() !== name) return { ok: false, root, testcases };
    } else if (!selfClosing) {
      if (stack.length === 0) root = name!;
      stack.push(name!);
    }
  }
  return { ok: consumed === body.length && stack.length === 0, root, testcases };
}
