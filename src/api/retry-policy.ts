/**
 * The API retry policy as data: backoff (time/backoff.ts) plus the statuses worth retrying and the cap on
 * what a Retry-After header may ask for, and the pure parsing of that header. The API client's loop
 * (calls-api-client.ts) applies it; nothing here sleeps or reads the clock.
 */
import { retrySchema, type RetryConfig } from '../config/schema.js';
import { readRetryAfter, waitMs } from './rate-limit/headers.js';

export type RetryPolicy = Readonly<RetryConfig>;

/** The config schema's defaults (`api.retry` left out), for callers built without a config (tests, tools). */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze(retrySchema.parse(undefined));

/**
 * The wait a Retry-After header value asks for, in milliseconds (0 for a time already past), or null when
 * the header is absent or makes no sense (the caller then falls back to backoff). Read by the one rule of
 * rate-limit/headers.ts (`readWait`): RFC 9110 10.2.3's delay-seconds and HTTP-date, and the other forms
 * APIs write, checked against the clock. Not capped: the caller applies api.retry.maxRetryAfterMs.
 *
 * @param nowMs the current time, injected.
 */
export function parseRetryAfterMs(value: string | null | undefined, nowMs: number): number | null {
  return waitMs(readRetryAfter(value, nowMs));
}
