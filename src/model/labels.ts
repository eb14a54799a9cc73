/**
 * PURE: agent labels and the selectors policies use, with Kubernetes' label syntax so that
 * a platform team's habits carry over. A label key is an optional DNS-subdomain prefix and
 * `/`, then a name of at most 63 characters; a value is at most 63 characters, possibly
 * empty. Both start and end with a letter or digit.
 */
import { z } from 'zod';
import { AGENT_NAME_CHARS, AGENT_NAME_MAX } from './common.js';

/** A name part or a value: alphanumeric at both ends, `-`, `_` and `.` inside. */
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const LABEL_VALUE_MAX = 63;

/** Why a label key is invalid, or null when it is valid. */
export function labelKeyProblem(key: string): string | null {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : null;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== null && (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix) || prefix.split('.').some((part) => part.length > 63))) {
    return `label key "${key}": the prefix before "/" must be a lowercase DNS subdomain of at most 253 characters, each part at most 63 (for example team.example.com)`;
  }
  if (name.length === 0 || name.length > 63) return `label key "${key}": the name must be 1 to 63 characters`;
  if (!LABEL_NAME.test(name)) {
    return `label key "${key}": the name may hold letters, digits, "-", "_" and "." and must start and end with a letter or digit`;
  }
  return null;
}

/** Why a label value is invalid, or null when it is valid. */
export function labelValueProblem(value: string): string | null {
  if (value.length > LABEL_VALUE_MAX) return `label value must be at most ${LABEL_VALUE_MAX} characters (it has ${value.length})`;
  if (value.length > 0 && !LABEL_NAME.test(value)) {
    return `label value "${value}" may hold letters, digits, "-", "_" and "." and must start and end with a letter or digit`;
  }
  return null;
}

export const LabelKeySchema = z.string().superRefine((key, ctx) => {
  const problem = labelKeyProblem(key);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

export const LabelValueSchema = z.string().superRefine((value, ctx) => {
  const problem = labelValueProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/**
 * A record drops an own `__proto__` key (JSON.parse makes one) without a word, which would
 * turn `match_labels: {"__proto__": "x"}` into "every agent": it is refused before.
 */
const NoProtoKey = z.unknown().superRefine((raw, ctx) => {
  if (typeof raw === 'object' && raw !== null && Object.hasOwn(raw, '__proto__')) {
    ctx.addIssue({ code: 'custom', path: ['__proto__'], message: 'label key "__proto__": the name must start and end with a letter or digit' });
  }
}).meta({ type: 'object' });

/** An agent's labels. Keys are checked one by one so that an error names the bad key. */
export const LabelsSchema = z
  .intersection(NoProtoKey, z.record(z.string(), LabelValueSchema))
  .superRefine((labels, ctx) => {
    const keys = Object.keys(labels);
    if (keys.length > 64) ctx.addIssue({ code: 'custom', message: 'an agent holds at most 64 labels' });
    for (const key of keys) {
      const problem = labelKeyProblem(key);
      if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
    }
  });
export type Labels = Record<string, string>;

export const SelectorOperatorSchema = z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']);

export const MatchExpressionSchema = z
  .strictObject({
    key: LabelKeySchema,
    operator: SelectorOperatorSchema,
    values: z.array(LabelValueSchema).max(256).optional(),
  })
  .superRefine((expr, ctx) => {
    const needsValues = expr.operator === 'In' || expr.operator === 'NotIn';
    if (needsValues && (expr.values === undefined || expr.values.length === 0)) {
      ctx.addIssue({ code: 'custom', path: ['values'], message: `operator ${expr.operator} needs a non-empty list of values` });
    }
    if (!needsValues && expr.values !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['values'], message: `operator ${expr.operator} takes no values; remove them` });
    }
  });
export type MatchExpression = z.infer<typeof MatchExpressionSchema>;

/**
 * Which agents a policy guards: those named, and those whose labels satisfy the label
 * selector (every `match_labels` pair and every expression). A selector given empty
 * (`match_labels: {}`) selects every agent, as in Kubernetes; `agents: {}` is refused so
 * that "everything" is always written on purpose.
 */
export const AgentSelectorSchema = z
  .strictObject({
    // Agent names' own rules (normalised, then checked; written out so the JSON Schema
    // keeps them): a name no agent can register under (a lookalike letter) is refused,
    // not kept as a selector that selects nobody.
    names: z
      .array(z.string().trim().toLowerCase().min(1).max(AGENT_NAME_MAX).regex(AGENT_NAME_CHARS, 'an agent name holds lowercase letters, digits and . _ : - and starts with a letter or digit'))
      .max(10_000)
      .optional(),
    match_labels: LabelsSchema.optional(),
    match_expressions: z.array(MatchExpressionSchema).max(64).optional(),
  })
  .superRefine((selector, ctx) => {
    if (selector.names === undefined && selector.match_labels === undefined && selector.match_expressions === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'agents selects nothing: give names, match_labels or match_expressions (match_labels: {} selects every agent)',
      });
    }
  });
export type AgentSelector = z.infer<typeof AgentSelectorSchema>;

/** Whether the selector selects an agent with this name and these labels. */
export function selectsAgent(selector: AgentSelector, agentName: string, labels: Labels): boolean {
  if (selector.names?.includes(agentName)) return true;
  if (selector.match_labels === undefined && selector.match_expressions === undefined) return false;
  for (const [key, value] of Object.entries(selector.match_labels ?? {})) {
    if (!Object.hasOwn(labels, key) || labels[key] !== value) return false;
  }
  for (const expr of selector.match_expressions ?? []) {
    const has = Object.hasOwn(labels, expr.key);
    const value = labels[expr.key];
    switch (expr.operator) {
      case 'In':
        if (!has || !(expr.values ?? []).includes(value!)) return false;
        break;
      case 'NotIn':
        // As in Kubernetes: an agent without the key is not "in" the set, so it is selected.
        if (has && (expr.values ?? []).includes(value!)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}

/**
 * `GET /agents?label=key=value` filters: `key=value` (equal), `key!=value`, or `key`
 * alone (present). Returns the parsed filter or a message saying what is wrong.
 */
export type LabelFilter = { key: string; op: '=' | '!=' | 'exists'; value: string };

export function parseLabelFilter(text: string): LabelFilter | string {
  const ne = text.indexOf('!=');
  const eq = text.indexOf('=');
  const [key, op, value]: [string, LabelFilter['op'], string] =
    ne >= 0 ? [text.slice(0, ne), '!=', text.slice(ne + 2)] : eq >= 0 ? [text.slice(0, eq), '=', text.slice(eq + 1).replace(/^=/, '')] : [text, 'exists', ''];
  const problem = labelKeyProblem(key.trim()) ?? (op === 'exists' ? null : labelValueProblem(value.trim()));
  return problem ?? { key: key.trim(), op, value: value.trim() };
}

export function matchesLabelFilter(filter: LabelFilter, labels: Labels): boolean {
  const has = Object.hasOwn(labels, filter.key);
  if (filter.op === 'exists') return has;
  if (filter.op === '=') return has && labels[filter.key] === filter.value;
  return !has || labels[filter.key] !== filter.value;
}
