/**
 * Backoff as data, and the pure arithmetic on it: how long to wait before retry n, and whether another
 * attempt is allowed. Shared by the API client's retry loop (api/retry-policy.ts adds statuses and
 * Retry-After) and the sync core (page commits, failing locations). Nothing here sleeps or reads the
 * clock: the caller passes its Clock's random number, so every rule is unit-tested with fixed inputs.
 */

export interface BackoffPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
  multiplier: number;
}

/**
 * Exponential backoff with full jitter (AWS architecture blog, "Exponential Backoff and Jitter"):
 * a uniform delay in [0, min(maxDelay, initial * multiplier^(retry-1))]. Full jitter spreads the retries of
 * many locations hit by one outage, instead of making them return in lock-step.
 *
 * @param retry 1 for the first retry (the wait after the first failed attempt), 2 for the next, ...
 * @param random a number in [0, 1); injected so tests are deterministic.
 */
export function backoffDelayMs(policy: Readonly<BackoffPolicy>, retry: number, random: number): number {
  if (!Number.isInteger(retry) || retry < 1)
    throw new RangeError(`retry must be an integer >= 1, got ${retry}`);
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** (retry - 1));
  return Math.floor(random * ceiling);
}

/** Whether another attempt is allowed after `attempts` attempts have been made. */
export function mayRetry(policy: Readonly<BackoffPolicy>, attempts: number): boolean {
  return attempts < policy.maxAttempts;
}
