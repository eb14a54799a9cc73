/**
 * Slows down key guessing: an address that sent `maxFailures` missing or unknown keys
 * within one window is answered 429 on every request that needs a key until the window
 * ends, whatever key it sends then (letting a right key through would tell a guesser
 * which guess was right). A success does not reset the count, so a client holding one
 * valid key cannot use it to keep guessing another. Memory is bounded: at most
 * `maxAddresses` addresses are remembered; past that the oldest windows are forgotten.
 */

export interface AuthThrottleOptions {
  /** Failures per window after which the address is refused until the window ends. */
  maxFailures: number;
  /** Length of a window, counted from the address's first failure in it. */
  windowMs?: number;
  /** Addresses remembered at most. */
  maxAddresses?: number;
  now?: () => number;
}

interface Window {
  start: number;
  failures: number;
}

export const AUTH_WINDOW_MS = 60_000;
export const AUTH_MAX_ADDRESSES = 10_000;

export class AuthThrottle {
  readonly #max: number;
  readonly #windowMs: number;
  readonly #maxAddresses: number;
  readonly #now: () => number;
  /** In order of window start: a new window is inserted at the end, so expired ones are at the front. */
  readonly #windows = new Map<string, Window>();

  constructor(options: AuthThrottleOptions) {
    this.#max = options.maxFailures;
    this.#windowMs = options.windowMs ?? AUTH_WINDOW_MS;
    this.#maxAddresses = options.maxAddresses ?? AUTH_MAX_ADDRESSES;
    this.#now = options.now ?? Date.now;
  }

  /** Milliseconds until `address` may try a key again; 0 when it may now. */
  blockedFor(address: string): number {
    // The common case (nobody failing) costs one size check.
    if (this.#windows.size === 0) return 0;
    const window = this.#windows.get(address);
    if (!window || window.failures < this.#max) return 0;
    const left = window.start + this.#windowMs - this.#now();
    if (left > 0) return left;
    this.#windows.delete(address);
    return 0;
  }

  /** Counts a missing or unknown key from `address`. */
  recordFailure(address: string): void {
    const now = this.#now();
    const window = this.#windows.get(address);
    if (window && now - window.start < this.#windowMs) {
      window.failures++;
      return;
    }
    this.#windows.delete(address);
    this.#windows.set(address, { start: now, failures: 1 });
    if (this.#windows.size > this.#maxAddresses) this.#forget(now);
  }

  /** How many addresses are remembered (tests check the bound). */
  get size(): number {
    return this.#windows.size;
  }

  /** Drops ended windows from the front, then the oldest ones until the bound holds. */
  #forget(now: number): void {
    for (const [address, window] of this.#windows) {
      if (this.#windows.size <= this.#maxAddresses && now - window.start < this.#windowMs) break;
      this.#windows.delete(address);
    }
  }
}
