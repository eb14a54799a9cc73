// Two generations of one directory that differ only in their controls' names (a rename).
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments, type LoadResult } from '../../src/gitops/load.js';

export const AGENTS = ['bot-a', 'bot-b', 'bot-c'];

/**
 * Every agent has one always-deny control and `perAgent` controls that never match, all
 * named with `suffix`: the two generations differ only in their names (a rename).
 */
export function generationText(suffix: string, perAgent: number): string {
  const docs: string[] = [];
  for (const agent of AGENTS) {
    const names = [`${agent}-always-deny-${suffix}`];
    docs.push(`kind: Control
name: ${agent}-always-deny-${suffix}
selector: { path: input }
evaluator: { name: regex, config: { pattern: '.' } }
action: { decision: deny }
`);
    for (let i = 0; i < perAgent; i++) {
      const name = `${agent}-${String(i).padStart(3, '0')}-${suffix}`;
      names.push(name);
      docs.push(`kind: Control
name: ${name}
selector: { path: input }
evaluator: { name: regex, config: { pattern: 'never-${i}-zzz' } }
action: { decision: log }
`);
    }
    docs.push(`kind: Agent\nagent_name: ${agent}\ncontrols: [${names.join(', ')}]\n`);
  }
  return docs.join('---\n');
}

/** `dir`: where the file is said to be (a prune keeps controls defined outside the directory it plans). */
export function generation(suffix: string, perAgent: number, dir?: string): LoadResult {
  const path = dir === undefined ? `${suffix}.yaml` : `${dir}/${suffix}.yaml`;
  return loadDocuments([{ path, text: generationText(suffix, perAgent) }], { validateControl: controlValidator(createDefaultRegistry()) });
}

/** The agents whose links hold neither every old nor every new control. */
export function unguarded(links: ReadonlyMap<string, readonly string[]>, oldGen: LoadResult, newGen: LoadResult): string[] {
  const want = (gen: LoadResult, agent: string) => gen.agents.find((a) => a.agent_name === agent)!.controls;
  const out: string[] = [];
  for (const agent of AGENTS) {
    const have = new Set(links.get(agent) ?? []);
    const covers = (gen: LoadResult) => want(gen, agent).every((name) => have.has(name));
    if (!covers(oldGen) && !covers(newGen)) out.push(`${agent}: ${have.size} links`);
  }
  return out;
}

