/**
 * PURE: the loader's cross-file rules, run once every document is read: a control or
 * agent defined twice, a link to a control no file defines, a control linked twice, a
 * control that is linked to no agent or disabled while linked, a session label required
 * that no control adds.
 */
import type { Diagnostic } from './diagnostics.js';
import { closestName } from './hints.js';
import { diag, where, type DocContext } from './load-context.js';

export interface SeenControl {
  name: string;
  ctx: DocContext;
  enabled: boolean;
  /** scope.session_labels as written (strings only), and action.session_labels. */
  requiresLabels?: readonly string[];
  addsLabels?: readonly string[];
  /** mode: shadow: its labels are named, never added. */
  shadow?: boolean;
}

export interface SeenAgent {
  ctx: DocContext;
  agent: { agent_name: string; controls: readonly string[] };
}

/** `complete`: false when a document could not be read, which may define what is linked. */
/** `boundByPolicy`: controls a policy binds, which run without being linked. */
export function checkCrossFile(
  controls: readonly SeenControl[],
  agents: readonly SeenAgent[],
  out: Diagnostic[],
  { complete = true, boundByPolicy = new Set<string>() }: { complete?: boolean; boundByPolicy?: ReadonlySet<string> } = {},
): void {
  checkDuplicateControls(controls, out);
  checkDuplicateAgents(agents, out);
  checkLinks(controls, agents, out, complete, boundByPolicy);
  if (complete) {
    checkSessionLabels(controls, out);
    checkAgentsSessionLabels(controls, agents, out, boundByPolicy);
  }
}

/**
 * Sessions are per agent: a label that only controls linked to other agents add is never
 * on the sessions of an agent whose linked control requires it, so that control never
 * applies to the agent (docs/sessions.md). A control a policy binds may reach any agent
 * (the policy's selector is the server's to resolve), so its labels count for every one.
 */
function checkAgentsSessionLabels(controls: readonly SeenControl[], agents: readonly SeenAgent[], out: Diagnostic[], boundByPolicy: ReadonlySet<string>): void {
  const byName = new Map<string, SeenControl>();
  for (const c of controls) if (!byName.has(c.name)) byName.set(c.name, c);
  const marks = (c: SeenControl | undefined): readonly string[] => (c !== undefined && c.enabled && c.shadow !== true ? (c.addsLabels ?? []) : []);
  const markedEverywhere = new Set([...boundByPolicy].flatMap((name) => marks(byName.get(name))));
  const markedSomewhere = new Set(controls.flatMap((c) => marks(c)));
  const seenAgents = new Set<string>();
  for (const { ctx, agent } of agents) {
    if (seenAgents.has(agent.agent_name)) continue;
    seenAgents.add(agent.agent_name);
    const marked = new Set([...markedEverywhere, ...agent.controls.flatMap((name) => marks(byName.get(name)))]);
    agent.controls.forEach((name, index) => {
      const c = byName.get(name);
      if (c === undefined || !c.enabled) return;
      // A label no enabled control adds anywhere is reported at the control (checkSessionLabels).
      const missing = (c.requiresLabels ?? []).filter((label) => markedSomewhere.has(label) && !marked.has(label));
      for (const label of new Set(missing)) {
        out.push({
          ...diag(ctx, 'warning', ['controls', index], false, 'session_label_never_marked',
            `session label "${label}" that control "${name}" requires is added by no control linked to agent "${agent.agent_name}" (sessions are per agent): "${name}" never applies to it`),
          hint: `link a control that adds "${label}" to agent "${agent.agent_name}", or bind one by a policy that selects it`,
        });
      }
    });
  }
}

/**
 * A label a control requires that no control of the directory adds is a typo: the control
 * would never apply, which silently turns a deny off (docs/sessions.md).
 */
function checkSessionLabels(controls: readonly SeenControl[], out: Diagnostic[]): void {
  const added = new Set(controls.flatMap((c) => c.addsLabels ?? []));
  // Disabled and shadow controls add none: a label only they add is never on a session.
  const marked = new Set(controls.filter((c) => c.enabled && c.shadow !== true).flatMap((c) => c.addsLabels ?? []));
  for (const c of controls) {
    (c.requiresLabels ?? []).forEach((label, index) => {
      if (marked.has(label)) return;
      if (added.has(label)) {
        if (c.enabled) {
          out.push({
            ...diag(c.ctx, 'warning', ['scope', 'session_labels', index], false, 'session_label_never_marked',
              `session label "${label}" is added only by controls that are disabled or in shadow mode, which add no labels: control "${c.name}" would never apply`),
            hint: 'enable or enforce a control that adds it; a shadow control that requires it reports no match until then',
          });
        }
        return;
      }
      const guess = closestName(label, [...added]);
      out.push({
        ...diag(c.ctx, 'error', ['scope', 'session_labels', index], false, 'session_label_never_added',
          `session label "${label}" is required here, but no control adds it (action.session_labels): control "${c.name}" would never apply`),
        hint: guess ? `did you mean "${guess}"?` : 'add it to the action.session_labels of the control whose match should mark the session',
      });
    });
  }
}

function checkDuplicateControls(controls: readonly SeenControl[], out: Diagnostic[]): void {
  const first = new Map<string, SeenControl>();
  for (const c of controls) {
    const earlier = first.get(c.name);
    if (!earlier) {
      first.set(c.name, c);
      continue;
    }
    const here = where(c.ctx, ['name']);
    const there = where(earlier.ctx, ['name']);
    out.push({
      ...diag(c.ctx, 'error', ['name'], false, 'duplicate_control', `control "${c.name}" is defined twice: at ${there} and at ${here}`),
      hint: `control names are the key guardctl syncs by; rename one of them or delete the copy at ${here}`,
    });
  }
}

function checkDuplicateAgents(agents: readonly SeenAgent[], out: Diagnostic[]): void {
  const first = new Map<string, SeenAgent>();
  for (const a of agents) {
    const earlier = first.get(a.agent.agent_name);
    if (!earlier) {
      first.set(a.agent.agent_name, a);
      continue;
    }
    const here = where(a.ctx, ['agent_name']);
    const there = where(earlier.ctx, ['agent_name']);
    out.push({
      ...diag(a.ctx, 'error', ['agent_name'], false, 'duplicate_agent', `agent "${a.agent.agent_name}" is defined twice: at ${there} and at ${here}`),
      hint: 'agent names are compared lowercased; keep one document per agent and merge their controls lists',
    });
  }
}

function checkLinks(controls: readonly SeenControl[], agents: readonly SeenAgent[], out: Diagnostic[], complete: boolean, boundByPolicy: ReadonlySet<string>): void {
  const declared = new Map<string, SeenControl>();
  for (const c of controls) if (!declared.has(c.name)) declared.set(c.name, c);
  const linkedBy = new Map<string, string[]>();
  const seenAgents = new Set<string>();
  for (const { ctx, agent } of agents) {
    if (seenAgents.has(agent.agent_name)) continue;
    seenAgents.add(agent.agent_name);
    const inThisAgent = new Set<string>();
    agent.controls.forEach((name, index) => {
      if (inThisAgent.has(name)) {
        out.push(diag(ctx, 'warning', ['controls', index], false, 'duplicate_link', `control "${name}" is listed twice for agent "${agent.agent_name}"`));
        return;
      }
      inThisAgent.add(name);
      if (!declared.has(name)) {
        if (!complete) return;
        const guess = closestName(name, [...declared.keys()]);
        out.push({
          ...diag(ctx, 'error', ['controls', index], false, 'dangling_link', `agent "${agent.agent_name}" links control "${name}", which no file defines`),
          hint: guess
            ? `did you mean "${guess}"? Otherwise add a kind: Control document named "${name}" or remove the link`
            : `add a kind: Control document named "${name}" or remove the link`,
        });
        return;
      }
      const list = linkedBy.get(name) ?? [];
      list.push(agent.agent_name);
      linkedBy.set(name, list);
    });
  }
  for (const [name, c] of declared) {
    const by = linkedBy.get(name);
    if (!by) {
      if (!complete || boundByPolicy.has(name)) continue;
      out.push(diag(c.ctx, 'warning', ['name'], false, 'unlinked_control', `control "${name}" is linked to no agent, so it never runs`));
    } else if (!c.enabled) {
      out.push({
        ...diag(c.ctx, 'warning', ['enabled'], false, 'disabled_linked', `control "${name}" is disabled but still linked to ${by.map((a) => `"${a}"`).join(', ')}`),
      });
    }
  }
}

