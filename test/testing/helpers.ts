import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments, type SourceFile } from '../../src/gitops/load.js';
import { runTests, type TestRunReport } from '../../src/testing/index.js';

/** A marker of `tainted` after read_web, and a deny of send in a tainted session: for multi-step cases. */
export const SESSION_CONTROLS = `kind: Control
name: mark
scope: { step_names: [read_web], stages: [post] }
selector: { path: name }
evaluator: { name: regex, config: { pattern: . } }
action: { decision: log, session_labels: [tainted] }
---
kind: Control
name: block
scope: { step_names: [send], stages: [pre], session_labels: [tainted] }
selector: { path: name }
evaluator: { name: regex, config: { pattern: . } }
action: { decision: deny }
---
kind: Agent
agent_name: bot
controls: [mark, block]
`;

export const CONTROLS = `kind: Control
name: no-drop
scope: { step_types: [tool], step_names: [run_sql], stages: [pre] }
selector: { path: input.query }
evaluator: { name: regex, config: { pattern: '(?i)drop table' } }
action: { decision: deny }
---
kind: Control
name: steer-prod
scope: { step_types: [tool], step_names: [deploy], stages: [pre] }
selector: { path: input.env }
evaluator: { name: list, config: { values: [prod] } }
action: { decision: steer, steering_context: { message: use a ticket } }
---
kind: Control
name: log-email
scope: { stages: [post] }
selector: { path: output }
evaluator: { name: regex, config: { pattern: '@' } }
action: { decision: log }
---
kind: Control
name: unused-deny
scope: { step_types: [llm], stages: [pre] }
selector: { path: input }
evaluator: { name: regex, config: { pattern: 'never-happens-xyz' } }
action: { decision: deny }
---
kind: Control
name: other-agents-control
selector: { path: input }
evaluator: { name: regex, config: { pattern: 'zzz' } }
action: { decision: deny }
---
kind: Agent
agent_name: bot
controls: [no-drop, steer-prod, log-email, unused-deny]
---
kind: Agent
agent_name: other
controls: [other-agents-control]
`;

export async function runOn(testsYaml: string, controls = CONTROLS): Promise<TestRunReport> {
  const registry = createDefaultRegistry();
  const files: SourceFile[] = [
    { path: 'controls.yaml', text: controls },
    { path: 'tests.yaml', text: testsYaml },
  ];
  const loaded = loadDocuments(files, { validateControl: controlValidator(registry) });
  const errors = loaded.diagnostics.filter((d) => d.severity === 'error');
  if (errors.length > 0) throw new Error(`fixture invalid: ${JSON.stringify(errors)}`);
  return runTests({ directory: 'fixture', controls: loaded.controls, agents: loaded.agents, policies: loaded.policies, tests: loaded.tests, registry });
}

/** A test document with the given cases (YAML list items, indented by two). */
export function testDoc(cases: string, agent = 'bot'): string {
  return `kind: Test\nname: suite\nagent: ${agent}\ncases:\n${cases}`;
}
