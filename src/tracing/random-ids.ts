/**
 * Fresh W3C trace and span ids, as lowercase hex, drawn from a buffer of random bytes
 * refilled 4 KiB at a time. One `randomUUID()` with its dashes removed cost several times
 * as much (the removal most of it), once per recorded evaluation without a trace.
 */
import { randomFillSync } from 'node:crypto';

const POOL = Buffer.allocUnsafe(4096);
let offset = POOL.length;

function randomHex(bytes: number): string {
  if (offset + bytes > POOL.length) {
    randomFillSync(POOL);
    offset = 0;
  }
  const hex = POOL.toString('hex', offset, offset + bytes);
  offset += bytes;
  return hex;
}

/** All zeros is not a valid id (W3C trace context); at 2^-64 and less it is drawn again all the same. */
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** 16 random bytes: a trace id. */
export function randomTraceId(): string {
  const id = randomHex(16);
  return id === ZERO_TRACE ? randomTraceId() : id;
}

/** 8 random bytes: a span id. */
export function randomSpanId(): string {
  const id = randomHex(8);
  return id === ZERO_SPAN ? randomSpanId() : id;
}
