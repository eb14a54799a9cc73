import type { ControlMatch, ControlResult, EvaluationResult, SteeringContext } from '../model/index.js';

/**
 * The evaluation answer as JSON text, written by hand for the hot path. Most of an answer
 * is its non-matches, and the engine answers an ordinary non-match with one frozen object
 * per control (evaluate.ts): the text of a frozen entry is computed once and reused, so a
 * step evaluated against ten controls serialises mostly by concatenation.
 *
 * Fields are picked explicitly, as the schema-driven serialiser did, so an evaluator that
 * returns extra keys in its outcome cannot leak them into the answer.
 */
export function evaluationResultJson(result: EvaluationResult): string {
  return (
    `{"is_safe":${result.is_safe ? 'true' : 'false'}` +
    `,"decision":${JSON.stringify(result.decision)}` +
    `,"confidence":${numberJson(result.confidence)}` +
    `,"steering_context":${result.steering_context ? steeringJson(result.steering_context) : 'null'}` +
    `,"matches":${listJson(result.matches)}` +
    `,"errors":${listJson(result.errors)}` +
    `,"non_matches":${listJson(result.non_matches)}` +
    `,"shadow_matches":${result.shadow_matches.length === 0 ? '[]' : joinedJson(result.shadow_matches)}}`
  );
}

/**
 * The answer as the bytes to send. Most answers a busy agent gets are the same as the one
 * before (allow, with the same frozen non-matches: see listJson), and that answer's bytes
 * are kept and sent again. A string answer would be concatenated, measured for its
 * Content-Length and encoded to UTF-8 by Node on every request: about 1.4 KB each time
 * for ten controls in scope.
 */
export function evaluationAnswer(result: EvaluationResult): Buffer {
  const repeatable =
    result.matches.length === 0 && result.errors.length === 0 && result.shadow_matches.length === 0 && result.steering_context === null;
  if (
    repeatable &&
    lastAnswer !== null &&
    result.decision === lastAnswer.decision &&
    result.is_safe === lastAnswer.is_safe &&
    result.confidence === lastAnswer.confidence &&
    sameEntries(result.non_matches, lastAnswer.nonMatches)
  ) {
    return lastAnswer.bytes;
  }
  const bytes = Buffer.from(evaluationResultJson(result), 'utf8');
  // Only an answer made of frozen entries is known to read the same next time.
  if (repeatable && sameEntries(result.non_matches, lastFrozenList)) {
    lastAnswer = { decision: result.decision, is_safe: result.is_safe, confidence: result.confidence, nonMatches: lastFrozenList, bytes };
  }
  return bytes;
}

interface RepeatedAnswer {
  decision: EvaluationResult['decision'];
  is_safe: boolean;
  confidence: number;
  nonMatches: readonly ControlMatch[];
  bytes: Buffer;
}
let lastAnswer: RepeatedAnswer | null = null;

/** Texts of frozen entries; weak, so compiled sets that are dropped take theirs along. */
const frozenText = new WeakMap<ControlMatch, string>();

/**
 * The last list answered entirely from frozen entries, and its text. A busy agent sends
 * the same step shape over and over, so its non-matches are usually the same entries in
 * the same order as last time: comparing ten references beats joining ten texts.
 */
let lastFrozenList: readonly ControlMatch[] = [];
let lastFrozenText = '[]';

function listJson(list: readonly ControlMatch[]): string {
  if (list.length === 0) return '[]';
  if (sameEntries(list, lastFrozenList)) return lastFrozenText;
  const text = joinedJson(list);
  if (list.every((m) => frozenText.has(m))) {
    lastFrozenList = list.slice();
    lastFrozenText = text;
  }
  return text;
}

function sameEntries(a: readonly ControlMatch[], b: readonly ControlMatch[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function joinedJson(list: readonly ControlMatch[]): string {
  return `[${list.map(entryJson).join(',')}]`;
}

function entryJson(m: ControlMatch): string {
  // Only an entry that can never change may be answered from the cache.
  const cacheable = Object.isFrozen(m) && Object.isFrozen(m.result);
  if (cacheable) {
    const known = frozenText.get(m);
    if (known !== undefined) return known;
  }
  const parts = [
    `{"control_id":${numberJson(m.control_id)}`,
    `,"control_name":${JSON.stringify(m.control_name)}`,
    `,"action":${JSON.stringify(m.action)}`,
    `,"result":${resultJson(m.result)}`,
  ];
  if (m.steering_context !== undefined) parts.push(`,"steering_context":${steeringJson(m.steering_context)}`);
  if (m.error !== undefined) parts.push(`,"error":${JSON.stringify(m.error)}`);
  if (m.selector_missing === true) parts.push(',"selector_missing":true');
  parts.push('}');
  // join makes one flat string: a cached text built with + would stay a tree of pieces,
  // several times its size, for as long as its control is compiled.
  const text = parts.join('');
  if (cacheable) frozenText.set(m, text);
  return text;
}

function resultJson(r: ControlResult): string {
  return (
    `{"matched":${r.matched ? 'true' : 'false'}` +
    `,"confidence":${numberJson(r.confidence)}` +
    `,"message":${r.message === null ? 'null' : JSON.stringify(r.message)}` +
    `,"metadata":${r.metadata === null ? 'null' : (JSON.stringify(r.metadata) ?? 'null')}}`
  );
}

function steeringJson(s: SteeringContext): string {
  const actions = s.required_actions === undefined ? '' : `,"required_actions":${JSON.stringify(s.required_actions)}`;
  return `{"message":${JSON.stringify(s.message)}${actions}}`;
}

/** JSON has no NaN or Infinity; the engine clamps confidences, so this is a safeguard. */
function numberJson(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}
