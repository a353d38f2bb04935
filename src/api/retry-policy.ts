/**
 * The API retry policy as data: backoff (time/backoff.ts) plus the statuses worth retrying and the cap on
 * what a Retry-After header may ask for, and the pure parsing of that header. The API client's loop
 * (calls-api-client.ts) applies it; nothing here sleeps or reads the clock.
 */
import { retrySchema, type RetryConfig } from '../config/schema.js';

export type RetryPolicy = Readonly<RetryConfig>;

/** The config schema's defaults (`api.retry` left out), for callers built without a config (tests, tools). */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze(retrySchema.parse(undefined));

/**
 * Parses a Retry-After header value (RFC 9110 10.2.3): either delay-seconds (a non-negative integer) or an
 * HTTP-date. Returns the wait in milliseconds (0 for a date in the past), or null when the header is
 * absent or unparsable (the caller then falls back to backoff).
 *
 * @param nowMs the current time, injected.
 */
export function parseRetryAfterMs(value: string | null | undefined, nowMs: number): number | null {
  if (value === null || value === undefined) return null;
  const text = value.trim();
  if (text === '') return null;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // HTTP-date: IMF-fixdate, or the obsolete RFC 850 / asctime forms, all of which Date.parse reads.
  // Require a weekday-name or month-name so that things like "1.5" or "-3" are not taken for dates.
  if (!/[A-Za-z]{3}/.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - nowMs);
}
