/**
 * The steps the MCP server was sent in a session (type, name, input and context): what the
 * server may still hold of what they read, and so what its later messages (notifications,
 * its own requests, answers to requests that are not steps) are checked as the output of.
 *
 * Only what a post control can tell apart is kept, so that a session of any length keeps
 * what it must without forgetting:
 * - a step no post control is scoped to is not kept: its output is allowed whatever it is;
 * - a post control that reads only the output with a stateless evaluator (one the agent's
 *   registry holds and knows not to count: `isStateless`) gives one verdict
 *   on a message whichever step of its scope it is checked as: one step is kept for it, the
 *   type and name of the latest in its scope without input or context (which it does not
 *   read, and another control of that step might: the step itself is kept for that one);
 * - a step in scope of a post control that reads more (the input, the name, the context,
 *   the whole step, or counts) is kept as it is, by type, name and input:
 *   the newest MAX_RECENT_STEPS of them. Past that bound the oldest is forgotten, and the
 *   session's later messages can no longer be checked as its output: `besides` answers
 *   null, and they are withheld (fail closed) rather than passed unchecked;
 * - but a post control that reads no output with a stateless evaluator (`input.path`, say)
 *   gives every output of a step the verdict it gave its answer: once that was allowed
 *   (`allowed`), a step only such controls keep is kept no longer; nor is one only
 *   counting controls keep (a budget of output tokens), which tell nothing of what an
 *   output holds. Only steps whose answer was refused, or never came (cancelled, timed
 *   out), or that a control reading the output and more keeps, count towards the bound.
 * The answer to a step is checked as the output of the others too (`others`), but only
 * where that can tell anything: a control the answered step is in scope of checks it
 * already, and a step in scope of a control that does not read the output is not checked
 * as: that control gives the verdict it gave before whatever the answer holds (checking
 * it would refuse every call after one it refused).
 * Scope is read from the controls in force when the step is sent (session labels aside:
 * a control scoped to labels counts as in scope). Shadow controls are not among them: they
 * never change a decision, so what they would match is no reason to withhold a message.
 */
import { createHash } from 'node:crypto';
import { modeOf, type Condition, type ControlRecord, type Selector, type EvaluatorSpec } from '../model/index.js';
import type { EvaluatorKind, GuardAgent, StepInput } from '../sdk/agent.js';
import { compileScope, type ScopeMatcher } from '../sdk/scope.js';

/** Steps kept as they are (those of post controls reading more than the output). */
export const MAX_RECENT_STEPS = 32;

/**
 * The counters built into every registry, the server's too (a plugin cannot take their
 * names): their verdict depends on the steps checked before, and tells nothing of what an
 * output holds. Of any other evaluator the agent says whether it counts (its registry's
 * definitions, and the server's word on its plugins: GuardAgent.evaluatorKind). One it
 * knows nothing of may count, read the whole step (every check is given it) and read the
 * output as well: it is never taken as reading only the output, and taken as reading the
 * output where its selector does.
 */
const BUILT_IN_COUNTERS: ReadonlySet<string> = new Set(['rate', 'budget', 'repeat']);

/** What of the agent the steps are kept for: its controls in force, and what it knows of an evaluator. */
export type GuardedBy = Pick<GuardAgent, 'controls' | 'evaluatorKind' | 'evaluatorKindsVersion'>;

type KindOf = (name: string) => EvaluatorKind;

/** A function of the value selected alone: the same verdict on a message whichever step of its scope it is checked as. */
const isStateless = (leaf: Leaf, kindOf: KindOf): boolean => leaf.evaluator !== undefined && kindOf(leaf.evaluator.name) === 'stateless';

/** Counts, and so tells nothing of what the output holds: a built-in counter, or a plugin the agent knows to count. */
const isCounter = (leaf: Leaf, kindOf: KindOf): boolean =>
  leaf.evaluator !== undefined && (BUILT_IN_COUNTERS.has(leaf.evaluator.name) || kindOf(leaf.evaluator.name) === 'counting');

interface Kept {
  key: string;
  step: StepInput;
  /** Every post control in its scope reads what the output holds: what they allow depends on what the server sends (`others`). */
  readsOutput: boolean;
  /** Kept only for controls that read nothing of what the output holds: an allowed answer lets it go. */
  blind: boolean;
}

export class RecentSteps {
  /** By control id: the type and name of the latest step in scope of a post control that reads only the output. */
  readonly #byControl = new Map<number, Kept>();
  /** Steps in scope of a post control that reads more, by type, name and input; the newest last. */
  readonly #steps = new Map<string, Kept>();
  #forgot = false;
  /** A step forgotten was one whose post controls read the output. */
  #forgotReading = false;

  constructor(private readonly agent: GuardedBy) {}

  note(step: StepInput): void {
    const scoped = postControlsOf(this.agent, step);
    if (scoped.outputOnly.length === 0 && !scoped.more) return;
    if (scoped.outputOnly.length > 0) {
      const named = { type: step.type, name: step.name, input: null };
      const kept = { key: keyOf(named), step: named, readsOutput: true, blind: false };
      for (const id of scoped.outputOnly) this.#byControl.set(id, kept);
    }
    if (!scoped.more) return;
    // The whole step, context included: a post control may select on `context.mcp_server`.
    const copy = { type: step.type, name: step.name, input: step.input, ...(step.context !== undefined && { context: step.context }) };
    const kept = { key: keyOf(step), step: copy, readsOutput: scoped.allReadOutput, blind: !scoped.reading };
    this.#steps.delete(kept.key);
    this.#steps.set(kept.key, kept);
    if (this.#steps.size > MAX_RECENT_STEPS) {
      const oldest = this.#steps.values().next().value!;
      this.#steps.delete(oldest.key);
      this.#forgot = true;
      if (oldest.readsOutput) this.#forgotReading = true;
    }
  }

  /** The post controls of `step` allowed its answer: those that read no output allow whatever else it sends. */
  allowed(step: StepInput): void {
    const key = keyOf(step);
    if (this.#steps.get(key)?.blind) this.#steps.delete(key);
  }

  /**
   * The steps kept that the answer to `step` is checked as the output of, besides its own
   * (noted before: it is never among them); null once a step whose controls read the output was forgotten.
   */
  others(step: StepInput): StepInput[] | null {
    if (this.#forgotReading) return null;
    const own = keyOf(step);
    const covered = new Set(postControlsOf(this.agent, step).outputOnly);
    const steps = new Map<string, StepInput>();
    for (const [id, kept] of this.#byControl) if (!covered.has(id)) steps.set(kept.key, kept.step);
    for (const kept of this.#steps.values()) if (kept.readsOutput && kept.key !== own) steps.set(kept.key, kept.step);
    return [...steps.values()];
  }

  /** The steps kept, but those among `pending` (by type, name and input); null once one was forgotten. */
  besides(pending: readonly StepInput[]): StepInput[] | null {
    if (this.#forgot) return null;
    const running = new Set(pending.map(keyOf));
    const steps = new Map<string, StepInput>();
    for (const { key, step } of [...this.#byControl.values(), ...this.#steps.values()]) if (!running.has(key)) steps.set(key, step);
    return [...steps.values()];
  }
}

interface PostControl {
  matches: ScopeMatcher;
  id: number;
  /** Reads only the step's output, with an evaluator that reads nothing else. */
  outputOnly: boolean;
  /** Reads what the output (or the whole step) holds, not only to count it, among other things or not. */
  readsOutput: boolean;
}

interface Scoped {
  /** The controls reading only the output. */
  outputOnly: number[];
  /** Others are in scope. */
  more: boolean;
  /** Every control in scope reads the output. */
  allReadOutput: boolean;
  /** A control in scope other than those reading only the output reads it too, or counts. */
  reading: boolean;
}

interface CompiledSet {
  /** The agent whose registry classed the evaluators, and what it knew of the server's then. */
  agent: GuardedBy;
  kindsVersion: number;
  controls: PostControl[];
  /** What is in scope, by type and name (a step is noted and answered: each asks), up to MAX_MEMO_NAMES. */
  memo: Map<string, Scoped>;
}

/** Names whose scope is kept; past it (names made up per call), scope is resolved each time. */
const MAX_MEMO_NAMES = 4096;

/** The post controls of a control set, compiled once per set (GuardAgent replaces the array on refresh). */
const compiled = new WeakMap<readonly ControlRecord[], CompiledSet>();

function postControlsOf(agent: GuardedBy, step: StepInput): Scoped {
  const records = agent.controls;
  const kindOf: KindOf = (name) => agent.evaluatorKind(name);
  let set = compiled.get(records);
  // One set of records given to two agents (setControls) is classed by the registry of each.
  if (set === undefined || set.agent !== agent || set.kindsVersion !== agent.evaluatorKindsVersion) {
    const controls = records.flatMap((r) => {
      // A shadow control never changes a decision: keeping steps for it would withhold messages it would let pass.
      if (!r.enabled || r.data === null || !r.data.enabled || modeOf(r.data) === 'shadow') return [];
      const leaves = leavesOf(r.data);
      return [{
        id: r.control_id, matches: compileScope(r.data.scope), outputOnly: leaves.every((l) => readsOutputOnly(l, kindOf)),
        // A counting leaf (a budget of output tokens) tells nothing of what the output holds.
        readsOutput: leaves.some((l) => readsOutput(l) && !isCounter(l, kindOf)),
      }];
    });
    set = { agent, kindsVersion: agent.evaluatorKindsVersion, controls, memo: new Map() };
    compiled.set(records, set);
  }
  const name = `${step.type}\u0000${step.name}`;
  let scoped = set.memo.get(name);
  if (scoped === undefined) {
    scoped = scopedOf(set.controls, step);
    if (set.memo.size < MAX_MEMO_NAMES) set.memo.set(name, scoped);
  }
  return scoped;
}

function scopedOf(controls: readonly PostControl[], step: StepInput): Scoped {
  const outputOnly: number[] = [];
  let more = false;
  let allReadOutput = true;
  let reading = false;
  for (const c of controls) {
    if (!c.matches(step.type, step.name, 'post')) continue;
    if (c.outputOnly) outputOnly.push(c.id);
    else {
      more = true;
      reading ||= c.readsOutput;
    }
    allReadOutput &&= c.readsOutput;
  }
  return { outputOnly, more, allReadOutput, reading };
}

type Leaf = { selector?: Selector | undefined; evaluator?: EvaluatorSpec | undefined };

function leavesOf(data: Leaf & { condition?: Condition | undefined }): Leaf[] {
  if (data.condition === undefined) return [data];
  const leaves: Leaf[] = [];
  const todo: Condition[] = [data.condition];
  while (todo.length > 0) {
    const c = todo.pop()!;
    if ('and' in c) todo.push(...c.and);
    else if ('or' in c) todo.push(...c.or);
    else if ('not' in c) todo.push(c.not);
    else leaves.push(c);
  }
  return leaves;
}

function readsOutputOnly(leaf: Leaf, kindOf: KindOf): boolean {
  const path = leaf.selector?.path;
  return path !== undefined && /^output(?:$|[.[])/.test(path) && isStateless(leaf, kindOf);
}

/** The output or the whole step (`*`); a leaf without a selector counts as reading it. */
function readsOutput(leaf: Leaf): boolean {
  const path = leaf.selector?.path;
  return path === undefined || path === '*' || /^output(?:$|[.[])/.test(path);
}

let unreadable = 0;

/** Inputs written out longer than this are keyed by their digest. */
const MAX_KEYED_TEXT = 1024;

/**
 * A step as a key: type, name and its input's JSON text, or past MAX_KEYED_TEXT a digest of
 * it (the input can be megabytes), which cannot be taken for a text (base64 never starts
 * with `[`). One too deep to write out is kept as a step of its own.
 * Short texts kept, not digested: 0.95 of the gateway's main-thread CPU per tools/call (2,140 against 2,251 ms for 5,000 stdio calls, 20 sdk controls, CPU profile; the key 2-3 against 20 µs).
 */
function keyOf(step: StepInput): string {
  let input: string;
  try {
    const text = JSON.stringify([step.input ?? null, step.context ?? null]);
    input = text.length <= MAX_KEYED_TEXT ? text : createHash('sha256').update(text).digest('base64');
  } catch {
    input = `\u0001${unreadable++}`;
  }
  return `${step.type}\u0000${step.name}\u0000${input}`;
}
