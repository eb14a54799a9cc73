/**
 * The maximal runs of ASCII digits in a text, found in one pass. PURE. Every number kind of
 * the pii evaluator (cards, SSNs, IBANs' check digits, IPv4 addresses, phone numbers) holds
 * digits, so its scanner starts from these runs instead of reading every character again:
 * a 2 KB answer holds a few dozen runs, and the text is read once for all kinds.
 */
export interface DigitRuns {
  /** Where each run starts, in text order. */
  readonly starts: readonly number[];
  /** Where each run ends (exclusive). */
  readonly ends: readonly number[];
}

export function digitRunsOf(text: string): DigitRuns {
  const starts: number[] = [];
  const ends: number[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) {
      i++;
      continue;
    }
    starts.push(i);
    i++;
    while (i < n) {
      const d = text.charCodeAt(i);
      if (d < 48 || d > 57) break;
      i++;
    }
    ends.push(i);
  }
  return { starts, ends };
}

/** Whether run `k + 1` follows run `k` after exactly one character, and that character is `sep` (or any of `seps`). */
export function joined(text: string, runs: DigitRuns, k: number, accepts: (c: number) => boolean): boolean {
  const end = runs.ends[k]!;
  return runs.starts[k + 1] === end + 1 && accepts(text.charCodeAt(end));
}
