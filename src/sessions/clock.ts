/**
 * The clock sessions are timed by: epoch milliseconds that move with the process's
 * monotonic clock, so that a step of the wall clock (NTP correcting a clock that ran
 * behind, an operator's date) cannot age every session at once and expire those a deny
 * control's labels live in. Anchored to the wall clock once, when the process starts.
 */
export function monotonicNow(): number {
  return performance.timeOrigin + performance.now();
}
