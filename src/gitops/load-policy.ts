/**
 * PURE: `kind: Policy` documents: schema (label syntax included, at file:line:col) and the
 * cross-file rules: a policy defined twice or binding a control no file defines is an
 * error; a selector that selects no agent of the directory, or a policy whose controls
 * are all disabled, is a warning (each is legal, and each guards nobody today).
 */
import type { z } from 'zod';
import { PolicyDocumentSchema, bindsOnlyDisabledMessage, fieldIssuesOf, selectsAgent, textIssuesOf, type FieldIssue, type PolicyDocument } from '../model/index.js';
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

/** The directory's controls by name: whether each is enabled. */
export type ControlsEnabled = ReadonlyMap<string, boolean>;

export function checkPolicies(
  policies: readonly PolicySeen[],
  controls: ControlsEnabled,
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
        if (controls.has(name)) return;
        const guess = closestName(name, [...controls.keys()]);
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
    const bound = policy.document.controls.filter((name) => controls.has(name));
    if (bound.length > 0 && bound.every((name) => controls.get(name) === false)) {
      out.push({
        ...diag(ctx, 'warning', ['controls'], false, 'binds_only_disabled', bindsOnlyDisabledMessage(policy.name)),
        hint: 'enable one of its controls (enabled: true), or remove the policy if it is retired',
      });
    }
  }
}
