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
  /**
   * Whose requests share a bucket (and a quota): the whole sandbox (default), each access token, or each
   * OAuth client (all the tokens of one client_id), as real APIs limit per token or per application.
   */
  per?: 'sandbox' | 'token' | 'client';
  /** Announce the limit: RateLimit-Policy and RateLimit fields (IETF draft) on every answer. Default off. */
  headers?: boolean;
  /** Requests allowed per quota window (per key); beyond it 429 with Retry-After to the window's end. */
  quota?: number | null;
  /** The quota's window in seconds (default one day). */
  quotaWindowSeconds?: number;
}

/** The limit state of one key (the sandbox, a token or a client). */
export interface LimitState {
  bucket: TokenBucket;
  quotaWindowStartMs: number;
  quotaUsed: number;
}

/** What the limit says about one request, and the seconds to send in Retry-After / the headers. */
export type Admission =
  | { ok: true; remaining: number; resetSeconds: number }
  | { ok: false; retryAfterSeconds: number; reason: 'rate' | 'quota' };

export function freshLimitState(settings: RateLimitSettings, nowMs: number): LimitState {
  return { bucket: fullBucket(settings, nowMs), quotaWindowStartMs: nowMs, quotaUsed: 0 };
}

/** Admits or refuses one request at `nowMs` (mutating `state`): the quota first, then the bucket. */
export function admit(state: LimitState, settings: RateLimitSettings, nowMs: number): Admission {
  const quota = settings.quota ?? null;
  if (quota !== null) {
    const windowMs = (settings.quotaWindowSeconds ?? 86_400) * 1000;
    if (nowMs - state.quotaWindowStartMs >= windowMs) {
      state.quotaWindowStartMs = nowMs;
      state.quotaUsed = 0;
    }
    if (state.quotaUsed >= quota) {
      const left = state.quotaWindowStartMs + windowMs - nowMs;
      return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil(left / 1000)), reason: 'quota' };
    }
  }
  const retryAfterSeconds = takeToken(state.bucket, settings, nowMs);
  if (retryAfterSeconds !== null) return { ok: false, retryAfterSeconds, reason: 'rate' };
  if (quota !== null) state.quotaUsed += 1;
  const remaining = Math.floor(state.bucket.tokens);
  const resetSeconds = Math.ceil((settings.burst - state.bucket.tokens) / settings.requestsPerSecond);
  return { ok: true, remaining, resetSeconds };
}

/**
 * The announced limit (draft-ietf-httpapi-ratelimit-headers): the sustained policy of q requests per w
 * seconds, and what is left now (r) with the seconds until the bucket is full again (t).
 */
export function rateLimitHeaders(settings: RateLimitSettings, admission: Admission): Record<string, string> {
  const policy = `"default";q=${settings.requestsPerSecond};w=1`;
  const current = admission.ok
    ? `"default";r=${admission.remaining};t=${admission.resetSeconds}`
    : `"default";r=0;t=${admission.retryAfterSeconds}`;
  return { 'ratelimit-policy': policy, ratelimit: current };
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
    !(typeof r.burst === 'number' && r.burst >= 1 && Number.isFinite(r.burst)) ||
    !(r.per === undefined || r.per === 'sandbox' || r.per === 'token' || r.per === 'client') ||
    !(r.headers === undefined || typeof r.headers === 'boolean') ||
    !(r.quota === undefined || r.quota === null || (Number.isInteger(r.quota) && r.quota >= 0)) ||
    !(
      r.quotaWindowSeconds === undefined ||
      (typeof r.quotaWindowSeconds === 'number' && r.quotaWindowSeconds > 0)
    )
  )
    throw new RangeError(
      "faults.rateLimit must be null or {requestsPerSecond: > 0, burst: >= 1, per?: 'sandbox'|'token'|'client', headers?: boolean, quota?: integer >= 0 | null, quotaWindowSeconds?: > 0}",
    );
}
