/**
 * An enforced request rate, as an API gateway keeps one: a token bucket holding at most `burst` tokens,
 * refilled at `requestsPerSecond`; a request that finds no token is answered 429 with the Retry-After of
 * the next token. Unlike `rateLimitRate` (429s drawn at random), these 429s are caused by the client's own
 * rate and bursts: the benchmark counts them to show the connector stays under the limit it is given.
 *
 * Time is passed in (ms, monotonic), so the bucket is a pure state machine.
 */
export interface RateLimitSettings {
  requestsPerSecond: number;
  /** Bucket size: how many requests may come at once after a quiet spell. */
  burst: number;
}

export interface TokenBucket {
  tokens: number;
  atMs: number;
}

/** A full bucket at `nowMs`. */
export function fullBucket(settings: RateLimitSettings, nowMs: number): TokenBucket {
  return { tokens: settings.burst, atMs: nowMs };
}

/**
 * Takes a token for a request at `nowMs` (mutating `bucket`): null when the request may go on, else the
 * whole seconds until a token is free (the Retry-After to send).
 */
export function takeToken(bucket: TokenBucket, settings: RateLimitSettings, nowMs: number): number | null {
  const elapsed = Math.max(0, nowMs - bucket.atMs);
  bucket.tokens = Math.min(settings.burst, bucket.tokens + (elapsed * settings.requestsPerSecond) / 1000);
  bucket.atMs = nowMs;
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1;
    return null;
  }
  return Math.max(1, Math.ceil((1 - bucket.tokens) / settings.requestsPerSecond));
}

export function checkRateLimit(v: unknown): void {
  const r = v as Partial<RateLimitSettings> | null;
  if (
    typeof r !== 'object' ||
    r === null ||
    !(
      typeof r.requestsPerSecond === 'number' &&
      r.requestsPerSecond > 0 &&
      Number.isFinite(r.requestsPerSecond)
    ) ||
    !(typeof r.burst === 'number' && r.burst >= 1 && Number.isFinite(r.burst))
  )
    throw new RangeError('faults.rateLimit must be null or {requestsPerSecond: > 0, burst: >= 1}');
}
