/**
 * The one retry primitive: backoff as data, the pure arithmetic on it (how long to wait before retry n,
 * whether another attempt is allowed), and `retrying`, the loop that applies it on the injected Clock
 * (kafkajs's createRetry is the model, on a Clock and an AbortSignal instead of setTimeout). Every backoff in
 * the product is this formula with its own numbers: the API client's retries (api/retry-policy.ts adds
 * statuses and Retry-After), page commits and failing locations (sync core), stopped locations
 * (sync/scheduler/health-rule.ts), token refreshes and the token endpoint (auth/), the token store's lock, the Kafka
 * leader elections (kafka/topics/leaders-settle.ts); restart-loop.ts applies it to what must keep running (the
 * topic readers, the signals channel). The arithmetic neither sleeps nor reads the clock: the caller
 * passes its Clock's random number, so every rule is unit-tested with fixed inputs.
 */
import { isProgrammerError } from '../errors/index.js';
import type { Clock } from './clock.js';

/** How delays grow: retry n waits up to min(maxDelayMs, initialDelayMs * multiplier^(n-1)), jittered. */
export interface Backoff {
  initialDelayMs: number;
  maxDelayMs: number;
  multiplier: number;
  /**
   * The share of each delay drawn at random, in [0, 1]. 1 (the default) is full jitter, a delay uniform in
   * [0, d]; 0.5 waits 50-100 % of d; 0 waits d exactly. Jitter spreads the retries of many callers hit by one
   * outage (AWS architecture blog, "Exponential Backoff and Jitter") instead of bringing them back in lock-step.
   */
  jitter?: number;
}

/** A backoff with a bound on attempts: what a retry loop needs. */
export interface BackoffPolicy extends Backoff {
  /** Attempts in all, the first included. */
  maxAttempts: number;
}

/** Exponents beyond this change nothing (the cap is reached) but could make `initialDelayMs * m^n` NaN. */
const MAX_EXPONENT = 64;

/**
 * The wait before retry `retry`: the ceiling min(maxDelayMs, initialDelayMs * multiplier^(retry-1)), of which
 * the `jitter` share is drawn at random: floor(ceiling * (1 - jitter + jitter * random)).
 *
 * @param retry 1 for the first retry (the wait after the first failed attempt), 2 for the next, ...
 * @param random a number in [0, 1] (the Clock's random()); injected so tests are deterministic.
 */
export function backoffDelayMs(policy: Readonly<Backoff>, retry: number, random: number): number {
  if (!Number.isInteger(retry) || retry < 1)
    throw new RangeError(`retry must be an integer >= 1, got ${retry}`);
  const jitter = policy.jitter ?? 1;
  if (!(jitter >= 0 && jitter <= 1)) throw new RangeError(`jitter must be in [0, 1], got ${jitter}`);
  const growth = policy.multiplier ** Math.min(retry - 1, MAX_EXPONENT);
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * growth);
  return Math.floor(ceiling * (1 - jitter + jitter * random));
}

/** Whether another attempt is allowed after `attempts` attempts have been made. */
export function mayRetry(policy: Readonly<Pick<BackoffPolicy, 'maxAttempts'>>, attempts: number): boolean {
  return attempts < policy.maxAttempts;
}

export interface RetryOptions {
  clock: Pick<Clock, 'sleep' | 'random'>;
  /** Aborts the wait between attempts (the attempt itself watches the signal if it is given one). */
  signal?: AbortSignal;
  /**
   * Whether a failure is worth another attempt: one naming a transient condition. A programmer error
   * (TypeError, RangeError, ...: errors/isProgrammerError) never is, whatever this says.
   */
  retriable: (error: unknown) => boolean;
  /** Called before each wait, with the number of the attempt that failed (1 for the first). */
  onRetry?: (retry: { attempt: number; error: unknown; waitMs: number }) => void;
}

/**
 * Runs `attempt` (given its number, from 1) until it resolves. A retriable failure is tried again after
 * `backoffDelayMs(policy, n)` on the clock, up to `policy.maxAttempts` attempts in all; the last failure, and
 * the first one that is not retriable, is thrown as it is. An abort of `signal` ends the wait with a rejection.
 */
export async function retrying<T>(
  policy: Readonly<BackoffPolicy>,
  options: RetryOptions,
  attempt: (n: number) => Promise<T>,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (isProgrammerError(error) || !options.retriable(error) || !mayRetry(policy, n)) throw error;
      const waitMs = backoffDelayMs(policy, n, options.clock.random());
      options.onRetry?.({ attempt: n, error, waitMs });
      options.signal?.throwIfAborted();
      await options.clock.sleep(waitMs, options.signal);
    }
  }
}
