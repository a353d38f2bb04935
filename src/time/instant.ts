/**
 * Instants from the API's ISO-8601 / RFC 3339 date-time strings, compared exactly.
 *
 * Why not `Date`: updatedAt may carry microseconds or nanoseconds, and two strings may name one instant
 * with different offsets or precision ("…00.5Z" and "…01.500000+01:00"). A JS Date keeps milliseconds
 * only, so comparing Dates would silently merge distinct instants (and break the boundary dedupe).
 * An Instant is whole epoch seconds plus the decimal fraction digits as a string, so any precision
 * survives and comparison is exact.
 */

export interface Instant {
  /** Whole seconds since 1970-01-01T00:00:00Z (UTC). */
  readonly epochSeconds: number;
  /** Decimal digits of the fraction of a second, trailing zeros removed ("" for a whole second). */
  readonly fraction: string;
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * Date.UTC with the year taken literally: Date.UTC itself maps years 0-99 to 1900-1999, which would make
 * "0050-…" the same instant as "1950-…".
 */
function utcMillis(year: number, monthIndex: number, day: number, hour = 0, minute = 0, second = 0): number {
  const date = new Date(Date.UTC(2000, monthIndex, day, hour, minute, second));
  date.setUTCFullYear(year, monthIndex, day);
  return date.getTime();
}

function daysInMonth(year: number, month: number): number {
  // Day 0 of the next month is the last day of this one.
  return new Date(utcMillis(year, month, 0)).getUTCDate();
}

/**
 * Parses an RFC 3339 date-time with a mandatory offset ("Z" or ±HH:MM). Returns null for anything else,
 * including impossible calendar values (Feb 30, hour 24) and leap seconds (:60), which the Avro
 * timestamp types cannot represent.
 */
export function parseInstant(text: string): Instant | null {
  const m = RFC3339.exec(text);
  if (m === null) return null;
  const [, y, mo, d, h, mi, s, frac, zulu, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (zulu === undefined) {
    const offH = Number(oh);
    const offM = Number(om);
    if (offH > 23 || offM > 59) return null;
    offsetMinutes = (sign === '-' ? -1 : 1) * (offH * 60 + offM);
  }
  const localSeconds = utcMillis(year, month - 1, day, hour, minute, second) / 1000;
  return { epochSeconds: localSeconds - offsetMinutes * 60, fraction: (frac ?? '').replace(/0+$/, '') };
}

/** Negative when a < b, zero when they name the same instant, positive when a > b. */
export function compareInstants(a: Instant, b: Instant): number {
  if (a.epochSeconds !== b.epochSeconds) return a.epochSeconds < b.epochSeconds ? -1 : 1;
  const width = Math.max(a.fraction.length, b.fraction.length);
  const fa = a.fraction.padEnd(width, '0');
  const fb = b.fraction.padEnd(width, '0');
  return fa === fb ? 0 : fa < fb ? -1 : 1;
}

/**
 * Compares two date-time strings as instants. Both must be valid (callers validate at the edge, in the
 * call mapper); an invalid one is a programmer error here.
 */
export function compareDateTimes(a: string, b: string): number {
  const ia = parseInstant(a);
  const ib = parseInstant(b);
  if (ia === null || ib === null) throw new RangeError(`not an RFC 3339 date-time: ${ia === null ? a : b}`);
  return compareInstants(ia, ib);
}

/** Microseconds since the epoch, truncated (the Avro `timestamp-micros` value); exact as a bigint. */
export function toEpochMicros(instant: Instant): bigint {
  const micros = instant.fraction.padEnd(6, '0').slice(0, 6);
  return BigInt(instant.epochSeconds) * 1_000_000n + BigInt(micros);
}

/** Milliseconds since the epoch, truncated; for gauges such as freshness. */
export function toEpochMillis(instant: Instant): number {
  return instant.epochSeconds * 1000 + Number(instant.fraction.padEnd(3, '0').slice(0, 3));
}
