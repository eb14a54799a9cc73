/**
 * The size of a pattern's RE2 program, read from its RE2 syntax, so that a control cannot
 * make one search cost more than a bounded amount per byte of text.
 *
 * RE2 searches in time linear in the text, but the factor is the program. While its DFA can
 * cache the states a text drives it through, a byte costs a table lookup; when it cannot
 * (a 2,000-character literal over a text of near misses, `x[xy]{20}z` over x and y), RE2
 * falls back to simulating the NFA, and a byte then costs work for every instruction that
 * can be live at once: measured, about 3.5 ns per instruction per byte. node-re2 does not
 * expose RE2's own ProgramSize, so it is counted here the way RE2 compiles:
 * - a literal character, a character class, `.` and `\C` count 1 each, an assertion 2 (a
 *   class is one position whatever its ranges: the NFA keeps one thread per position, so
 *   this is what the work per byte follows, even though RE2 spends more instructions on a
 *   Unicode class);
 * - a capture group adds 2, `*` `+` `?` add 2, an alternation adds 1 per `|`;
 * - a counted repetition expands as RE2 expands it: `x{n}` is n copies, `x{n,m}` is n
 *   copies and m - n optional ones, `x{n,}` is n copies and a loop.
 * RE2 may then merge or share parts (alternatives into a class, common prefixes), so RE2's
 * own count is at most this one for ASCII patterns: the bound errs on the safe side.
 *
 * The input is RE2 syntax that RE2 has already accepted (node-re2's translation of the
 * pattern, `internalSource`), so the reader need not report syntax errors.
 */

/** The program size of `source`, RE2 syntax that compiles (see the module comment). */
export function programSizeOf(source: string): number {
  return new SizeReader(source).read();
}

/** An assertion, counted with room for the empty-match instructions RE2 adds around one that repeats. */
const EMPTY_WIDTH = 2;
const QUANTIFIER = /\{(\d+)(?:(,)(\d*))?\}/y;
const GROUP_NAME = /\?P?<[A-Za-z0-9_]+>/y;
const FLAG_GROUP = /\?[imsU-]*([:)])/y;

class SizeReader {
  #at = 0;

  constructor(readonly src: string) {}

  read(): number {
    let size = this.alternation();
    // RE2 accepted the pattern, so nothing is left; were anything left, it still counts.
    while (this.#at < this.src.length) {
      this.#at++;
      size += 1 + this.alternation();
    }
    return size;
  }

  /** branch ('|' branch)*, up to a ')' or the end. */
  private alternation(): number {
    let size = this.branch();
    while (this.src[this.#at] === '|') {
      this.#at++;
      size += 1 + this.branch();
    }
    return size;
  }

  private branch(): number {
    // An empty branch still compiles to an instruction (an empty match).
    let size = 0;
    let atoms = 0;
    while (this.#at < this.src.length && this.src[this.#at] !== '|' && this.src[this.#at] !== ')') {
      size += this.repeated(this.atom());
      atoms++;
    }
    return atoms === 0 ? 1 : size;
  }

  /** An atom's size with the quantifiers that follow it applied. */
  private repeated(atom: number): number {
    let size = atom;
    for (;;) {
      const c = this.src[this.#at];
      if (c === '*' || c === '+' || c === '?') {
        this.#at++;
        size += 2;
      } else if (c === '{') {
        QUANTIFIER.lastIndex = this.#at;
        const m = QUANTIFIER.exec(this.src);
        if (!m) return size; // not a repetition: RE2 reads the brace as a literal (the next atom)
        this.#at = QUANTIFIER.lastIndex;
        const min = Number(m[1]);
        if (m[2] === undefined) size = min * size;
        else if (m[3] === '') size = Math.max(1, min) * size + 2;
        else size = min * size + (Number(m[3]) - min) * (size + 1);
      } else {
        return size;
      }
      if (this.src[this.#at] === '?') this.#at++; // non-greedy: the same program
    }
  }

  private atom(): number {
    const c = this.src[this.#at]!;
    switch (c) {
      case '(':
        return this.group();
      case '[':
        this.skipClass();
        return 1;
      case '\\':
        return this.escape();
      case '^':
      case '$':
        this.#at++;
        return EMPTY_WIDTH;
      default:
        // A literal (a surrogate pair is one character), `.`, or a brace that is not a
        // repetition.
        this.#at += c.charCodeAt(0) >= 0xd800 && c.charCodeAt(0) <= 0xdbff ? 2 : 1;
        return 1;
    }
  }

  private group(): number {
    const src = this.src;
    this.#at++; // (
    let capture = 2;
    if (src[this.#at] === '?') {
      GROUP_NAME.lastIndex = this.#at;
      FLAG_GROUP.lastIndex = this.#at;
      if (GROUP_NAME.exec(src)) {
        this.#at = GROUP_NAME.lastIndex;
      } else {
        const flags = FLAG_GROUP.exec(src);
        if (flags) {
          this.#at = FLAG_GROUP.lastIndex;
          if (flags[1] === ')') return 1; // (?i): changes flags; at most an empty match
        } else {
          this.#at++;
        }
        capture = 0;
      }
    }
    const inner = this.alternation();
    if (src[this.#at] === ')') this.#at++;
    return capture + inner;
  }

  private escape(): number {
    const src = this.src;
    const c = src[this.#at + 1];
    this.#at += 2;
    if (c !== undefined && 'bBAz'.includes(c)) return EMPTY_WIDTH;
    if (c === 'Q') {
      // \Q...\E: every character up to \E (or the end) is a literal.
      const end = src.indexOf('\\E', this.#at);
      const stop = end < 0 ? src.length : end;
      const size = stop - this.#at;
      this.#at = end < 0 ? src.length : end + 2;
      return size;
    }
    if ((c === 'x' || c === 'p' || c === 'P') && src[this.#at] === '{') {
      this.skipPast('}');
    } else if (c === 'x') {
      this.#at += 2;
    } else if (c === 'p' || c === 'P') {
      this.#at += 1;
    } else if (c !== undefined && c >= '0' && c <= '7') {
      // Octal: up to two more digits.
      for (let i = 0; i < 2 && /[0-7]/.test(src[this.#at] ?? ''); i++) this.#at++;
    }
    return 1;
  }

  /** From "[" past its "]": a leading "^" and "]", escapes and [:name:] included. */
  private skipClass(): void {
    const src = this.src;
    this.#at++;
    if (src[this.#at] === '^') this.#at++;
    if (src[this.#at] === ']') this.#at++;
    while (this.#at < src.length) {
      const c = src[this.#at];
      if (c === ']') {
        this.#at++;
        return;
      }
      if (c === '\\') {
        const next = src[this.#at + 1];
        this.#at += 2;
        if ((next === 'x' || next === 'p' || next === 'P') && src[this.#at] === '{') this.skipPast('}');
      } else if (c === '[' && src[this.#at + 1] === ':') {
        const end = src.indexOf(':]', this.#at + 2);
        this.#at = end < 0 ? this.#at + 1 : end + 2;
      } else {
        this.#at++;
      }
    }
  }

  private skipPast(close: string): void {
    const end = this.src.indexOf(close, this.#at);
    this.#at = end < 0 ? this.src.length : end + 1;
  }
}
