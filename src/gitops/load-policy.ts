/**
 * PURE: `kind: Policy` documents: schema (label syntax included, at file:line:col) and the
 * cross-file rules: a policy defined twice or binding a control no file defines is an
 * error; a selector that selects no agent of the directory is a warning (agents that
 * register later may still match it).
 */
import type { z } from 'zod';
import { PolicyDocumentSchema, fieldIssuesOf, selectsAgent, textIssuesOf, type FieldIssue, type PolicyDocument } from '../model/index.js';
import type { Diagnostic } from './diagnostics.js';
import { closestName } from './hints.js';
import { diag, startOf, where, type DocContext, type SourceLocation } from './load-context.js';

export interface LoadedPolicy {
  name: string;
  document: PolicyDocument;
  source: SourceLocation;
}

export interface PolicySeen {
  ctx: DocContext;
  policy: LoadedPolicy;
}

type IssueReporter = (ctx: DocContext, issue: FieldIssue, schema: z.ZodType, evaluators: readonly string[]) => Diagnostic;

export function loadPolicy(ctx: DocContext, value: Record<string, unknown>, out: Diagnostic[], report: IssueReporter): PolicySeen | null {
  const text = textIssuesOf(value);
  for (const issue of text) out.push(report(ctx, issue, PolicyDocumentSchema, []));
  if (text.length > 0) return null;
  const parsed = PolicyDocumentSchema.safeParse(value);
  if (!parsed.success) {
    for (const issue of fieldIssuesOf(parsed.error)) out.push(report(ctx, issue, PolicyDocumentSchema, []));
    return null;
  }
  return { ctx, policy: { name: parsed.data.name, document: parsed.data, source: startOf(ctx) } };
}

export function checkPolicies(
  policies: readonly PolicySeen[],
  controlNames: ReadonlySet<string>,
  agents: ReadonlyArray<{ agent_name: string; labels: Record<string, string> }>,
  out: Diagnostic[],
  complete: boolean,
): void {
  const first = new Map<string, PolicySeen>();
  for (const seen of policies) {
    const { ctx, policy } = seen;
    const earlier = first.get(policy.name);
    if (earlier) {
      out.push({
        ...diag(ctx, 'error', ['name'], false, 'duplicate_policy', `policy "${policy.name}" is defined twice: at ${where(earlier.ctx, ['name'])} and at ${where(ctx, ['name'])}`),
        hint: 'policy names are the key guardctl syncs by; rename one of them or delete the copy',
      });
      continue;
    }
    first.set(policy.name, seen);
    if (complete) {
      policy.document.controls.forEach((name, index) => {
        if (controlNames.has(name)) return;
        const guess = closestName(name, [...controlNames]);
        out.push({
          ...diag(ctx, 'error', ['controls', index], false, 'unknown_control', `policy "${policy.name}" binds control "${name}", which no file defines`),
          hint: guess ? `did you mean "${guess}"? Otherwise add a kind: Control document named "${name}"` : `add a kind: Control document named "${name}" or remove it`,
        });
      });
    }
    const selector = policy.document.agents;
    if (complete && !agents.some((a) => selectsAgent(selector, a.agent_name, a.labels))) {
      out.push({
        ...diag(ctx, 'warning', ['agents'], false, 'selects_nothing', `policy "${policy.name}" selects no agent defined in this directory`),
        hint: 'agents that register later with matching labels are still guarded; check the labels if you expected a match',
      });
    }
  }
}
