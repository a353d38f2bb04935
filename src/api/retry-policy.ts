/**
 * The retry policy as data, and the pure arithmetic on it: how long to wait before attempt n, and what a
 * Retry-After header asks for. The API client's loop (calls-api-client.ts) applies it; nothing here
 * sleeps or reads the clock, so every rule is unit-tested with fixed inputs.
 */
import type { RetryConfig } from '../config/schema.js';

export type RetryPolicy = Readonly<RetryConfig>;

/** Defaults equal to the config schema's, for callers built without a config (tests, tools). */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxAttempts: 8,
  initialDelayMs: 250,
  maxDelayMs: 30_000,
  multiplier: 2,
  statuses: [408, 425, 429, 500, 502, 503, 504],
  maxRetryAfterMs: 300_000,
});

/**
 * Exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff and Jitter"):
 * a uniform delay in [0, min(maxDelay, initial * multiplier^(retry-1))]. Full jitter spreads the retries of
 * many locations hit by one outage, instead of making them return in lock-step.
 *
 * @param retry 1 for the first retry (the wait after the first failed attempt), 2 for the next, ...
 * @param random a number in [0, 1); injected so tests are deterministic.
 */
export function backoffDelayMs(policy: RetryPolicy, retry: number, random: number): number {
  if (!Number.isInteger(retry) || retry < 1)
    throw new RangeError(`retry must be an integer >= 1, got ${retry}`);
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** (retry - 1));
  return Math.floor(random * ceiling);
}

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

/** Whether another attempt is allowed after `attempts` attempts have been made. */
export function mayRetry(policy: RetryPolicy, attempts: number): boolean {
  return attempts < policy.maxAttempts;
}
