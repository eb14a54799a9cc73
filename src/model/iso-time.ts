/**
 * ISO 8601 times (`2026-11-29T06:12:03.456Z`) written and read on the recording path.
 * V8 formats a Date with snprintf and parses one with its general date parser: several
 * thousand instructions each, once per stored event on each side of the event writer.
 * Events of one second share everything but the milliseconds, so each side keeps the
 * last second it saw and only writes or reads the three digits after it.
 */

/** The form both functions handle quickly: four-digit years, milliseconds, UTC. */
const PLAIN_ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const PREFIX_LENGTH = 20; // 'YYYY-MM-DDTHH:MM:SS.'

let formattedSecond = Number.NaN;
let formattedPrefix = '';

/** `new Date(ms).toISOString()`, without formatting a date when the second is the last one's. */
export function isoOfEpochMs(ms: number): string {
  if (!Number.isInteger(ms)) return new Date(ms).toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== formattedSecond) {
    const full = new Date(second * 1000).toISOString();
    // Years before 0 or after 9999 are written with six digits and a sign.
    if (!PLAIN_ISO.test(full)) return new Date(ms).toISOString();
    formattedSecond = second;
    formattedPrefix = full.slice(0, PREFIX_LENGTH);
  }
  const millis = ms - second * 1000;
  return `${formattedPrefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

let parsedPrefix = '';
let parsedSecondMs = 0;

/** `Date.parse(iso)` (NaN when it is not a time), reading only the milliseconds when the second is the last one's. */
export function epochMsOfIso(iso: string): number {
  if (iso.length === PREFIX_LENGTH + 4 && parsedPrefix !== '' && iso.startsWith(parsedPrefix)) {
    const a = iso.charCodeAt(20) - 48;
    const b = iso.charCodeAt(21) - 48;
    const c = iso.charCodeAt(22) - 48;
    if (a >= 0 && a <= 9 && b >= 0 && b <= 9 && c >= 0 && c <= 9 && iso.charCodeAt(23) === 90 /* Z */) {
      return parsedSecondMs + a * 100 + b * 10 + c;
    }
  }
  const ms = Date.parse(iso);
  // Only a time in the plain form, that Date.parse read as written, becomes the new second.
  if (!Number.isNaN(ms) && PLAIN_ISO.test(iso) && isoOfEpochMs(ms) === iso) {
    parsedPrefix = iso.slice(0, PREFIX_LENGTH);
    parsedSecondMs = Math.floor(ms / 1000) * 1000;
  }
  return ms;
}
