import { constantRecordId } from '../engine/index.js';
import type { ApprovalRef, ControlMatch, ControlResult, EvaluationResult, SteeringContext } from '../model/index.js';

/**
 * The evaluation answer as JSON text, written by hand for the hot path; a property test
 * holds it equal to JSON.stringify of the result (test/server/result-json.test.ts). Most
 * of an answer is its non-matches, and the engine answers an ordinary non-match with its
 * constant record per control (engine/build-control.ts constantRecord): the text of such
 * an entry is computed once and reused, so a step evaluated against ten controls
 * serialises mostly by concatenation.
 * Kept against one answer cache with an explicit key: these caches save 6.5% of the
 * instructions per request (callgrind, realistic workload, observability on, 2026-12-06).
 *
 * Fields are picked explicitly, as the schema-driven serialiser did, so an evaluator that
 * returns extra keys in its outcome cannot leak them into the answer.
 *
 * Each app has its own writer (routes/evaluation.ts): what it remembers of the answers
 * before is that app's, never shared with another app in the process.
 */
export class AnswerWriter {
  /**
   * Bytes of recent answers made only of constant non-matches, by their first entry (or
   * NO_ENTRIES): an agent's steps take a few shapes in turn (a query, an e-mail, a model
   * output), and each shape's plain allow reads the same every time. A few answers are
   * kept per first entry, newest first; the map is weak, so a dropped compiled set takes
   * its answers along.
   */
  readonly #repeated = new WeakMap<object, RepeatedAnswer[]>();
  /** Texts of constant entries; weak, so compiled sets that are dropped take theirs along. */
  readonly #frozenText = new WeakMap<ControlMatch, string>();
  /**
   * The last list answered entirely from constant entries, and its text. A busy agent sends
   * the same step shape over and over, so its non-matches are usually the same entries in
   * the same order as last time: comparing ten references beats joining ten texts.
   */
  #lastFrozenList: readonly ControlMatch[] = [];
  #lastFrozenText = '[]';

  json(result: EvaluationResult): string {
    return (
      this.#headJson(result) +
      (result.session === undefined ? '' : sessionJson(result.session)) +
      // Only asked steps carry an approval; its fields are the server's own (ids, times, the approver's reason).
      `${result.approval === undefined ? '' : `,"approval":${JSON.stringify(approvalFields(result.approval))}`}}`
    );
  }

  /** The answer up to its lists' end: what steps of different sessions share. */
  #headJson(result: EvaluationResult): string {
    return (
      `{"is_safe":${result.is_safe ? 'true' : 'false'}` +
      `,"decision":${JSON.stringify(result.decision)}` +
      `,"confidence":${numberJson(result.confidence)}` +
      `,"steering_context":${result.steering_context ? steeringJson(result.steering_context) : 'null'}` +
      `,"matches":${this.#listJson(result.matches)}` +
      `,"errors":${this.#listJson(result.errors)}` +
      `,"non_matches":${this.#listJson(result.non_matches)}` +
      `,"shadow_matches":${result.shadow_matches.length === 0 ? '[]' : `[${result.shadow_matches.map((m) => this.#entryJson(m)).join(',')}]`}`
    );
  }

  /**
   * The answer as the bytes to send. Most answers a busy agent gets are ones it got before
   * (allow, with the same constant non-matches: see #repeated), and those bytes are sent
   * again. A string answer would be concatenated, measured for its Content-Length and
   * encoded to UTF-8 by Node on every request: about 1.4 KB each time for ten controls in
   * scope.
   */
  answer(result: EvaluationResult): Buffer {
    const repeatable =
      result.matches.length === 0 && result.errors.length === 0 && result.shadow_matches.length === 0 && result.steering_context === null && result.approval === undefined;
    const head = repeatable ? this.#repeatedHead(result) : null;
    if (head === null) return Buffer.from(this.json(result), 'utf8');
    if (result.session === undefined) return head;
    // A step of a session: the kept bytes with the session spliced in before the closing
    // brace (its id and labels differ from session to session; the rest does not).
    const tail = `${sessionJson(result.session)}}`;
    const bytes = Buffer.allocUnsafe(head.length - 1 + Buffer.byteLength(tail, 'utf8'));
    head.copy(bytes, 0, 0, head.length - 1);
    bytes.write(tail, head.length - 1, 'utf8');
    return bytes;
  }

  /**
   * The bytes of the answer without its session (it ends in the closing brace), kept when
   * every entry is constant; null when some entry may change.
   */
  #repeatedHead(result: EvaluationResult): Buffer | null {
    const key: object = result.non_matches[0] ?? NO_ENTRIES;
    const kept = this.#repeated.get(key);
    if (kept !== undefined) {
      for (const known of kept) {
        if (result.decision === known.decision && result.is_safe === known.is_safe && result.confidence === known.confidence && sameEntries(result.non_matches, known.nonMatches)) {
          return known.bytes;
        }
      }
    }
    // Only an answer made of constant entries is known to read the same next time.
    if (!result.non_matches.every((m) => constantRecordId(m) !== undefined)) return null;
    const text = `${this.#headJson(result)}}`;
    // Kept bytes get a buffer of their own: a small Buffer.from is a slice of Node's shared
    // 8 KB pool, and keeping the slice would keep the whole pool block alive with it.
    const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text, 'utf8'));
    bytes.write(text, 'utf8');
    const entry = { decision: result.decision, is_safe: result.is_safe, confidence: result.confidence, nonMatches: result.non_matches.slice(), bytes };
    if (kept === undefined) this.#repeated.set(key, [entry]);
    else {
      kept.unshift(entry);
      if (kept.length > ANSWERS_PER_FIRST_ENTRY) kept.pop();
    }
    return bytes;
  }

  #listJson(list: readonly ControlMatch[]): string {
    if (list.length === 0) return '[]';
    if (sameEntries(list, this.#lastFrozenList)) return this.#lastFrozenText;
    const text = `[${list.map((m) => this.#entryJson(m)).join(',')}]`;
    if (list.every((m) => this.#frozenText.has(m))) {
      this.#lastFrozenList = list.slice();
      this.#lastFrozenText = text;
    }
    return text;
  }

  #entryJson(m: ControlMatch): string {
    // Only an entry that can never change may be answered from the cache: the engine's
    // constant records are frozen and numbered when they are built.
    const cacheable = constantRecordId(m) !== undefined;
    if (cacheable) {
      const known = this.#frozenText.get(m);
      if (known !== undefined) return known;
    }
    const text = entryJson(m);
    if (cacheable) this.#frozenText.set(m, text);
    return text;
  }
}

/** The session part of an answer: its id and labels (text the client chose, so written by JSON.stringify). */
function sessionJson(session: NonNullable<EvaluationResult['session']>): string {
  return `,"session":{"id":${JSON.stringify(session.id)},"labels":${JSON.stringify(session.labels)}}`;
}

/** The approval's fields by name, so nothing else an object carries reaches the answer. */
function approvalFields(a: ApprovalRef): ApprovalRef {
  const out: ApprovalRef = { id: a.id, status: a.status, expires_at: a.expires_at };
  if (a.decided_by !== undefined) out.decided_by = a.decided_by;
  if (a.reason !== undefined) out.reason = a.reason;
  return out;
}

/** The key of answers without non-matches (no control in scope). */
const NO_ENTRIES = Object.freeze({});

/** Answers kept per first non-match: the shapes whose non-matches start with the same control. */
const ANSWERS_PER_FIRST_ENTRY = 4;

interface RepeatedAnswer {
  decision: EvaluationResult['decision'];
  is_safe: boolean;
  confidence: number;
  nonMatches: readonly ControlMatch[];
  bytes: Buffer;
}

function sameEntries(a: readonly ControlMatch[], b: readonly ControlMatch[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function entryJson(m: ControlMatch): string {
  const parts = [
    `{"control_id":${numberJson(m.control_id)}`,
    `,"control_name":${JSON.stringify(m.control_name)}`,
    `,"action":${JSON.stringify(m.action)}`,
    `,"result":${resultJson(m.result)}`,
  ];
  if (m.steering_context !== undefined) parts.push(`,"steering_context":${steeringJson(m.steering_context)}`);
  if (m.error !== undefined) parts.push(`,"error":${JSON.stringify(m.error)}`);
  if (m.selector_missing === true) parts.push(',"selector_missing":true');
  if (m.session_labels_added !== undefined) parts.push(`,"session_labels_added":${JSON.stringify(m.session_labels_added)}`);
  parts.push('}');
  // join makes one flat string: a cached text built with + would stay a tree of pieces,
  // several times its size, for as long as its control is compiled.
  return parts.join('');
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
