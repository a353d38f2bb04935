/**
 * ISO-8601 text <-> epoch microseconds, for the Avro `timestamp-micros` fields.
 *
 * The calls API's updatedAt may carry more than milliseconds, which a JS Date would drop, so parsing goes
 * through the sync engine's exact Instant (the same parser the mapper validates updatedAt with).
 * Microseconds since the epoch fit a JS number exactly until the year 2255 (2^53 µs), so no bigint is
 * needed. Digits beyond microseconds are truncated; the exact text is published as updatedAtIso.
 */
import { parseInstant } from '../../time/instant.js';

/** Parses an RFC 3339 date-time with an offset. Returns undefined when it is not one. */
export function isoToEpochMicros(text: string): number | undefined {
  const instant = parseInstant(text);
  if (instant === null) return undefined;
  const value = instant.epochSeconds * 1_000_000 + Number(instant.fraction.slice(0, 6).padEnd(6, '0'));
  return Number.isSafeInteger(value) ? value : undefined;
}

/** Formats epoch microseconds as UTC ISO-8601 with six fractional digits, e.g. 2024-05-01T10:00:00.123456Z. */
export function epochMicrosToIso(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const rest = micros - millis * 1000;
  const text = new Date(millis).toISOString(); // ...ss.mmmZ
  return `${text.slice(0, -1)}${String(rest).padStart(3, '0')}Z`;
}
