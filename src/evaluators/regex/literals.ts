/**
 * Required literals of a regular expression: a few ASCII strings of which every match
 * must contain at least one. A text that holds none of them cannot match, so a regex check
 * answers "no match" after a substring search instead of a call into RE2; a call into the
 * native library costs several microseconds on a server (converting the text, crossing
 * into C++ with cold caches) against a few hundred nanoseconds for the search. The same
 * idea drives RE2's own prefilters and the literal optimisations of ripgrep and Hyperscan.
 *
 * Soundness is all that matters here: a missed match would let a step through a control.
 * So the extraction reads the RE2 syntax the evaluator accepts and gives up (no prefilter,
 * RE2 runs as always) on anything it does not understand exactly. Literals are ASCII only,
 * and a pattern with a case-insensitive flag is compared on lowercased text: the only
 * non-ASCII characters RE2's case folding equates with ASCII letters are the Kelvin sign
 * (which toLowerCase maps to "k") and the long s "ſ" (mapped to "s" here); the tests check
 * that claim against RE2 for every code point.
 */
import type { ValueMemo } from '../types.js';

export interface Prefilter {
  /** Every match contains one of these; lowercased when `folded`. */
  readonly literals: readonly string[];
  /** Compare with the text lowercased (the pattern has a case-insensitive part). */
  readonly folded: boolean;
}

/** Strings in one set: beyond this a set is too weak (and too slow) to be worth it. */
const MAX_SET = 16;
/** Any substring of a required string is required too, so long ones are cut. */
const MAX_LITERAL = 64;
/** A required string shorter than this is found in most texts: no prefilter. */
const MIN_USEFUL = 3;
/**
 * Texts longer than this skip the prefilter and go to RE2. A substring search costs up to
 * about 10 ns per byte on a text of near misses (`xx…x` searched for `xxy`), once per
 * literal: on a long text, 16 literals would cost a hundred times RE2's one linear pass.
 * Below this length the search is bounded (under a millisecond) and usually far cheaper
 * than a call into RE2.
 */
export const PREFILTER_MAX_TEXT = 4096;

/** What one part of a pattern tells about its matches. */
interface Info {
  /** Every string the part can match, when that set is small and known; "" included. */
  exact: readonly string[] | null;
  /** When `exact` is null: every match contains one of these (null: nothing known). */
  required: readonly string[] | null;
}

const ANY: Info = { exact: null, required: null };
const EMPTY: Info = { exact: [''], required: null };

class GiveUp extends Error {}

/**
 * The prefilter of `pattern` (RE2 syntax), or null when nothing useful can be proven.
 * `minLength` (tests) lowers the length below which a literal is not worth searching for.
 */
export function prefilterOf(pattern: string, minLength = MIN_USEFUL): Prefilter | null {
  const parser = new Parser(pattern);
  let info: Info;
  try {
    info = parser.parse();
  } catch (err) {
    if (err instanceof GiveUp) return null;
    throw err;
  }
  const set = requiredOf(info);
  if (set === null || set.length > MAX_SET || set.some((s) => s.length < minLength)) return null;
  const literals = parser.folded ? [...new Set(set.map((s) => s.toLowerCase()))] : [...set];
  // Read on every step: readonly by type but not frozen, since V8 (Node 20) reads a frozen
  // array's elements through a slow path in optimised code.
  return Object.freeze({ literals, folded: parser.folded });
}

/** False only when `text` cannot match the pattern the prefilter was built from. */
export function mayMatch(prefilter: Prefilter, text: string, memo?: ValueMemo): boolean {
  if (text.length > PREFILTER_MAX_TEXT) return true;
  let hay = text;
  if (prefilter.folded) {
    hay = memo ? memo.lower(text) : text.toLowerCase();
    // RE2 folds "ſ" (U+017F) with "s"; toLowerCase leaves it as it is.
    if (hay.includes('ſ')) hay = hay.replaceAll('ſ', 's');
  }
  const literals = prefilter.literals;
  for (let i = 0; i < literals.length; i++) if (hay.includes(literals[i]!)) return true;
  return false;
}

/** False only when `text` can match none of the patterns the prefilters were built from. */
export function mayMatchAny(prefilters: readonly Prefilter[], text: string, memo?: ValueMemo): boolean {
  if (text.length > PREFILTER_MAX_TEXT) return true;
  for (let i = 0; i < prefilters.length; i++) if (mayMatch(prefilters[i]!, text, memo)) return true;
  return false;
}

/**
 * One prefilter per kind of comparison (folded or not) saying what all of `prefilters` say
 * together: a text passes the result exactly when it passes one of them. Controls scanned
 * together often require the same word ("table" in most SQL controls), which is then
 * searched for once, and the text checked for "ſ" once, instead of once per control.
 */
export function mergePrefilters(prefilters: readonly Prefilter[]): Prefilter[] {
  const folded = new Set<string>();
  const exact = new Set<string>();
  for (const p of prefilters) for (const literal of p.literals) (p.folded ? folded : exact).add(literal);
  const merged: Prefilter[] = [];
  if (folded.size > 0) merged.push(Object.freeze({ literals: [...folded], folded: true }));
  if (exact.size > 0) merged.push(Object.freeze({ literals: [...exact], folded: false }));
  return merged;
}

function requiredOf(info: Info): readonly string[] | null {
  if (info.exact !== null) return info.exact.includes('') ? null : info.exact;
  return info.required;
}

/** The more selective of two requirements: longer shortest string, then fewer strings. */
function better(a: readonly string[] | null, b: readonly string[] | null): readonly string[] | null {
  if (a === null || a.length > MAX_SET) return b !== null && b.length <= MAX_SET ? b : null;
  if (b === null || b.length > MAX_SET) return a;
  const shortest = (s: readonly string[]) => Math.min(...s.map((x) => x.length));
  const da = shortest(a);
  const db = shortest(b);
  if (da !== db) return da > db ? a : b;
  return b.length < a.length ? b : a;
}

/** Every concatenation of a string of `a` with one of `b`; null when too many. */
function product(a: readonly string[], b: readonly string[]): readonly string[] | null {
  if (a.length * b.length > MAX_SET) return null;
  const out = new Set<string>();
  for (const x of a) for (const y of b) out.add((x + y).slice(0, MAX_LITERAL));
  return [...out];
}

function union(sets: ReadonlyArray<readonly string[]>): readonly string[] | null {
  const out = new Set<string>();
  for (const s of sets) for (const x of s) out.add(x);
  return out.size <= MAX_SET ? [...out] : null;
}

const QUANTIFIER = /\{(\d+)(?:(,)(\d*))?\}/y;
const GROUP_NAME = /(?:P?<)([A-Za-z0-9_]+)>/y;
const FLAGS = /([imsU]*)(?:-([imsU]*))?([:)])/y;
/** Escapes of one character that match one (unknown) character. */
const CLASS_ESCAPES = 'dDsSwWC';
/** Escapes that match the empty string at some position. */
const ASSERTION_ESCAPES = 'bBAz';
/** Characters with a meaning of their own outside a class. */
const SPECIAL = '\\.+*?()|[]{}^$';

class Parser {
  #at = 0;
  /** Whether any part of the pattern is case-insensitive. */
  folded = false;

  constructor(readonly src: string) {}

  parse(): Info {
    const info = this.alternation();
    if (this.#at !== this.src.length) throw new GiveUp();
    return info;
  }

  /** branch ('|' branch)*, up to a ')' or the end. */
  private alternation(): Info {
    const branches = [this.branch()];
    while (this.src[this.#at] === '|') {
      this.#at++;
      branches.push(this.branch());
    }
    if (branches.length === 1) return branches[0]!;
    if (branches.every((b) => b.exact !== null)) {
      const exact = union(branches.map((b) => b.exact!));
      if (exact !== null) return { exact, required: null };
    }
    const each = branches.map(requiredOf);
    if (each.some((r) => r === null)) return ANY;
    return { exact: null, required: union(each as Array<readonly string[]>) };
  }

  /** A concatenation: literal runs are joined, and the most selective requirement kept. */
  private branch(): Info {
    let best: readonly string[] | null = null;
    let run: readonly string[] = [''];
    let exact = true;
    const endRun = () => {
      best = better(best, requiredOf({ exact: run, required: null }));
      run = [''];
      exact = false;
    };
    while (this.#at < this.src.length && this.src[this.#at] !== '|' && this.src[this.#at] !== ')') {
      const part = this.quantified(this.atom());
      if (part.exact !== null) {
        const joined = product(run, part.exact);
        if (joined !== null) {
          run = joined;
        } else {
          endRun();
          run = part.exact;
        }
      } else {
        endRun();
        best = better(best, part.required);
      }
    }
    if (exact) return { exact: run, required: null };
    endRun();
    return { exact: null, required: best };
  }

  private quantified(atom: Info): Info {
    const c = this.src[this.#at];
    let min: number;
    let atMostOne = false;
    if (c === '*') {
      min = 0;
      this.#at++;
    } else if (c === '+') {
      min = 1;
      this.#at++;
    } else if (c === '?') {
      min = 0;
      atMostOne = true;
      this.#at++;
    } else if (c === '{') {
      QUANTIFIER.lastIndex = this.#at;
      const m = QUANTIFIER.exec(this.src);
      // RE2 reads a brace that is not a repetition as a literal; not worth the risk.
      if (!m) throw new GiveUp();
      min = Number(m[1]);
      this.#at = QUANTIFIER.lastIndex;
    } else {
      return atom;
    }
    if (this.src[this.#at] === '?') this.#at++; // non-greedy: same strings
    if ('*+?{'.includes(this.src[this.#at] ?? '-')) throw new GiveUp();
    if (atMostOne) return atom.exact !== null ? { exact: union([atom.exact, ['']]), required: null } : ANY;
    if (min === 0) return ANY;
    return { exact: null, required: requiredOf(atom) };
  }

  private atom(): Info {
    const src = this.src;
    const c = src[this.#at]!;
    switch (c) {
      case '(':
        return this.group();
      case '[':
        this.skipClass();
        return ANY;
      case '.':
        this.#at++;
        return ANY;
      case '^':
      case '$':
        this.#at++;
        return EMPTY;
      case '\\':
        return this.escape();
      default:
        break;
    }
    if (SPECIAL.includes(c)) throw new GiveUp();
    const code = src.codePointAt(this.#at)!;
    this.#at += code > 0xffff ? 2 : 1;
    return code < 0x80 ? { exact: [c], required: null } : ANY;
  }

  private group(): Info {
    const src = this.src;
    this.#at++; // (
    if (src[this.#at] === '?') {
      this.#at++;
      if (src[this.#at] === 'P' || src[this.#at] === '<') {
        GROUP_NAME.lastIndex = this.#at;
        if (!GROUP_NAME.exec(src)) throw new GiveUp(); // look-behind and the like
        this.#at = GROUP_NAME.lastIndex;
      } else {
        FLAGS.lastIndex = this.#at;
        const m = FLAGS.exec(src);
        if (!m || (m[1] === '' && m[2] === undefined && m[3] === ')')) throw new GiveUp();
        // Case-insensitive anywhere: compare on lowercased text everywhere (weaker, sound).
        if (m[1]!.includes('i')) this.folded = true;
        this.#at = FLAGS.lastIndex;
        if (m[3] === ')') return EMPTY;
      }
    }
    const inner = this.alternation();
    if (src[this.#at] !== ')') throw new GiveUp();
    this.#at++;
    return inner;
  }

  private escape(): Info {
    const src = this.src;
    const c = src[this.#at + 1];
    if (c === undefined) throw new GiveUp();
    this.#at += 2;
    if (CLASS_ESCAPES.includes(c)) return ANY;
    if (ASSERTION_ESCAPES.includes(c)) return EMPTY;
    if (c === 'p' || c === 'P') {
      if (src[this.#at] === '{') this.skipPast('}');
      else this.#at++;
      return ANY;
    }
    const code = c.charCodeAt(0);
    // Escaped punctuation is the character itself; letters and digits (octal, \x, \Q…)
    // each have rules of their own: give up rather than misread them.
    const punctuation = code < 0x80 && !/[A-Za-z0-9]/.test(c);
    if (!punctuation) throw new GiveUp();
    return { exact: [c], required: null };
  }

  /** From "[" to its "]": escapes, a leading "]" and [:name:] classes included. */
  private skipClass(): void {
    const src = this.src;
    this.#at++;
    if (src[this.#at] === '^') this.#at++;
    if (src[this.#at] === ']') this.#at++;
    for (;;) {
      const c = src[this.#at];
      if (c === undefined) throw new GiveUp();
      if (c === ']') {
        this.#at++;
        return;
      }
      if (c === '\\') {
        this.#at += 2;
      } else if (c === '[' && src[this.#at + 1] === ':') {
        const end = src.indexOf(':]', this.#at + 2);
        if (end < 0 || !/^\^?[a-z]+$/.test(src.slice(this.#at + 2, end))) throw new GiveUp();
        this.#at = end + 2;
      } else {
        this.#at++;
      }
    }
  }

  private skipPast(close: string): void {
    const end = this.src.indexOf(close, this.#at);
    if (end < 0) throw new GiveUp();
    this.#at = end + 1;
  }
}
