/**
 * PURE: why apply would refuse a plan, and the command that gets past it. A plan with
 * conflicts (controls of the directory's names that another owner manages) is one apply
 * refuses, so plan says so and exits 1 rather than letting CI find out at apply time.
 *
 * The common case is the owner trap: a first local `guardctl apply` runs as owner
 * `default`, the CI workflow as `--owner $GITHUB_REPOSITORY`, and CI's plan then finds
 * every changed control owned by someone else. `--adopt default` is its exact fix.
 */
import { DEFAULT_OWNER, type Conflict, type Plan } from './plan.js';

/** Conflicting controls of one owner, why they are not this plan's, and what takes them over. */
export interface ConflictGroup {
  /** Their `managed_by`: `gitops:<id>`, `watch:<dir>`, or null (made outside guardctl apply). */
  managed_by: string | null;
  names: string[];
  why: string;
  /** The command that takes them over, or null when taking over is not the fix (a watched directory). */
  command: string | null;
  /** What the command does, or what to do instead. */
  advice: string;
}

export interface Refusal {
  /** The reason, for example `2 controls of the same name exist on the server under another owner than gitops:ci`. */
  message: string;
  groups: ConflictGroup[];
}

/** How the plan was asked for, to repeat it in the commands. */
export interface PlanInvocation {
  directory: string;
  owner: string;
  /** Given when the server was named (flag or GUARD_URL); the default is left out of commands. */
  server?: string | null;
}

export function refusalOf(plan: Pick<Plan, 'conflicts' | 'managed_by'>, invocation: PlanInvocation): Refusal | null {
  if (plan.conflicts.length === 0) return null;
  const byOwner = new Map<string | null, Conflict[]>();
  const bound = plan.conflicts.filter((c) => c.bound_by);
  for (const conflict of plan.conflicts.filter((c) => !c.bound_by)) byOwner.set(conflict.managed_by, [...(byOwner.get(conflict.managed_by) ?? []), conflict]);
  const groups = [...byOwner].map(([owner, conflicts]) => {
    const group = groupOf(owner, [...new Set(conflicts.map((c) => c.name))], invocation);
    const agents = [...new Set(conflicts.filter((c) => c.op).map((c) => c.agent_name))].map((a) => `"${a}"`);
    if (agents.length === 0) return group;
    // Links to a watched directory's controls are kept there, like the controls themselves.
    return {
      ...group,
      why: `${group.why}; so are the links of agent ${agents.join(', ')} to them`,
      advice: `${group.advice}; or leave agent ${agents.join(', ')} to that directory (take its kind: Agent document out of this one)`,
    };
  });
  groups.push(...bound.map(boundGroupOf));
  const controls = plan.conflicts.filter((c) => !c.op && !c.bound_by).length;
  const links = plan.conflicts.filter((c) => c.op).length;
  const reasons: string[] = [];
  if (controls > 0) {
    reasons.push(`${controls} control${controls === 1 ? '' : 's'} of the same name ${controls === 1 ? 'exists' : 'exist'} on the server under another owner than ${plan.managed_by}`);
  }
  if (links > 0) {
    reasons.push(`${links} link${links === 1 ? '' : 's'} it would change name${links === 1 ? 's' : ''} a control a watched directory keeps (guardctl serve --watch), which the server refuses`);
  }
  if (bound.length > 0) {
    reasons.push(
      `${bound.length} control${bound.length === 1 ? '' : 's'} it would delete ${bound.length === 1 ? 'is' : 'are'} bound by a policy it keeps, and the server refuses to delete a control a policy binds`,
    );
  }
  return { message: reasons.join('; '), groups };
}

/** A delete the server refuses because policies bind the control: no flag gets past it. */
function boundGroupOf(conflict: Conflict): ConflictGroup {
  const policies = (conflict.bound_by ?? []).map((p) => `"${p.policy}" (${p.managed_by === null ? 'made outside guardctl apply' : `owned by ${p.managed_by}`})`);
  return {
    managed_by: conflict.managed_by,
    names: [conflict.name],
    why: `bound by ${policies.length === 1 ? 'policy' : 'policies'} ${policies.join(', ')}`,
    command: null,
    advice: `take "${conflict.name}" out of the controls of ${policies.length === 1 ? 'that policy' : 'those policies'} (or delete ${policies.length === 1 ? 'it' : 'them'}) first, or keep the control in the directory`,
  };
}

function groupOf(managedBy: string | null, names: string[], invocation: PlanInvocation): ConflictGroup {
  const { owner } = invocation;
  if (managedBy === null) {
    return {
      managed_by: null,
      names,
      why: 'made outside guardctl apply (through the API, the SDK or by hand)',
      command: applyCommand(invocation, ['--force']),
      advice: 'takes over every conflicting control; or rename the controls in the directory',
    };
  }
  if (managedBy.startsWith('watch:')) {
    const dir = managedBy.slice('watch:'.length);
    return {
      managed_by: managedBy,
      names,
      why: `kept by the hot reload of ${dir} (guardctl serve --watch), which would take them back`,
      command: null,
      advice: `edit them in ${dir}, or rename them in this directory`,
    };
  }
  if (managedBy.startsWith('gitops:')) {
    const other = managedBy.slice('gitops:'.length);
    return { managed_by: managedBy, names, why: ownerTrap(other, owner), command: applyCommand(invocation, ['--adopt', other]), advice: `makes them gitops:${owner}, so this directory manages them from now on` };
  }
  return { managed_by: managedBy, names, why: `owned by ${managedBy}`, command: applyCommand(invocation, ['--force']), advice: 'takes over every conflicting control; or rename the controls in the directory' };
}

/** Why another gitops owner holds them, said in terms of the flags that made it so. */
function ownerTrap(other: string, owner: string): string {
  const ci = 'as a CI workflow does with --owner $GITHUB_REPOSITORY';
  if (other === DEFAULT_OWNER) return `applied without --owner (owner "${DEFAULT_OWNER}"), for example by a first local guardctl apply; this plan runs with --owner ${owner}, ${ci}`;
  if (owner === DEFAULT_OWNER) return `applied with --owner ${other}, ${ci}; this plan runs without --owner (owner "${DEFAULT_OWNER}")`;
  return `applied with --owner ${other}; this plan runs with --owner ${owner}`;
}

function applyCommand(invocation: PlanInvocation, extra: string[]): string {
  const words = ['guardctl', 'apply', shellWord(invocation.directory)];
  if (invocation.server) words.push('--server', shellWord(invocation.server));
  if (invocation.owner !== DEFAULT_OWNER) words.push('--owner', shellWord(invocation.owner));
  return [...words, ...extra.map(shellWord)].join(' ');
}

/** A word as a POSIX shell reads it back: bare when safe, else single-quoted. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9._/:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
