/**
 * Fresh W3C trace and span ids, as lowercase hex, sliced from a string of random hex made
 * 4 KiB of random bytes at a time: one `toString('hex')` per refill instead of one per id
 * (each costs about a thousand instructions), and one `randomUUID()` with its dashes
 * removed cost several times as much again.
 */
import { randomBytes } from 'node:crypto';

const POOL_BYTES = 4096;
let pool = '';
let offset = 0;

function randomHex(bytes: number): string {
  const chars = bytes * 2;
  if (offset + chars > pool.length) {
    pool = randomBytes(POOL_BYTES).toString('hex');
    offset = 0;
  }
  const hex = pool.slice(offset, offset + chars);
  offset += chars;
  return hex;
}

/** All zeros is not a valid id (W3C trace context); at 2^-64 and less it is drawn again all the same. */
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
const ZERO_CODE = 48;

/** 16 random bytes: a trace id. */
export function randomTraceId(): string {
  const id = randomHex(16);
  // The first digit first: comparing the whole id as a string costs a call into V8's runtime.
  return id.charCodeAt(0) === ZERO_CODE && id === ZERO_TRACE ? randomTraceId() : id;
}

/** 8 random bytes: a span id. */
export function randomSpanId(): string {
  const id = randomHex(8);
  return id.charCodeAt(0) === ZERO_CODE && id === ZERO_SPAN ? randomSpanId() : id;
}
