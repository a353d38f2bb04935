/**
 * An enforced request rate, as an API gateway keeps one: a token bucket holding at most `burst` tokens,
 * refilled at `requestsPerSecond`; a request that finds no token is answered 429 with the Retry-After of
 * the next token. Unlike `rateLimitRate` (429s drawn at random), these 429s are caused by the client's own
 * rate and bursts: the benchmark counts them to show the connector stays under the limit it is given.
 *
 * The limit can be announced in the header forms real APIs use (`headers`, `resetForm`): the IETF draft's
 * fields, or the common X-RateLimit-* with the reset as seconds from now, a Unix time in seconds or one in
 * milliseconds (issue 32: an API announcing epoch milliseconds stalled the connector).
 *
 * Time is passed in (ms, the sandbox clock), so the bucket is a pure state machine.
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
  /**
   * Announce the limit on every answer: `true` or `'ietf'`, the RateLimit-Policy and RateLimit fields (IETF
   * draft: the bucket); `'x-ratelimit'`, X-RateLimit-Limit / -Remaining / -Reset (the quota when there is
   * one, else the bucket). Default off.
   */
  headers?: boolean | 'ietf' | 'x-ratelimit';
  /**
   * How the announced reset (`t` of RateLimit, or X-RateLimit-Reset) is written: seconds from now (default,
   * as the IETF draft says), a Unix time in seconds, or a Unix time in milliseconds.
   */
  resetForm?: ResetForm;
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

export type ResetForm = 'delta-seconds' | 'epoch-seconds' | 'epoch-ms';
const RESET_FORMS: readonly ResetForm[] = ['delta-seconds', 'epoch-seconds', 'epoch-ms'];

/** What is left of a quota window after an admitted request. */
export interface QuotaLeft {
  quota: number;
  remaining: number;
  /** Time until the window ends. */
  resetMs: number;
}

/** What the limit says about one request, and the seconds to send in Retry-After / the headers. */
export type Admission =
  | { ok: true; remaining: number; resetSeconds: number; quota: QuotaLeft | null }
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
  let left: QuotaLeft | null = null;
  if (quota !== null) {
    state.quotaUsed += 1;
    const windowMs = (settings.quotaWindowSeconds ?? 86_400) * 1000;
    left = {
      quota,
      remaining: quota - state.quotaUsed,
      resetMs: state.quotaWindowStartMs + windowMs - nowMs,
    };
  }
  const remaining = Math.floor(state.bucket.tokens);
  const resetSeconds = Math.ceil((settings.burst - state.bucket.tokens) / settings.requestsPerSecond);
  return { ok: true, remaining, resetSeconds, quota: left };
}

/** A reset `inMs` from now, written in `form` (`epochNowMs`: the sandbox clock). */
export function resetValue(inMs: number, form: ResetForm, epochNowMs: number): string {
  if (form === 'epoch-ms') return String(Math.ceil(epochNowMs + inMs));
  if (form === 'epoch-seconds') return String(Math.ceil((epochNowMs + inMs) / 1000));
  return String(Math.ceil(inMs / 1000));
}

/** How a 429's Retry-After is written (RFC 9110 10.2.3): delay-seconds, or the HTTP-date it ends at. */
export type RetryAfterForm = 'delay-seconds' | 'http-date';
export const RETRY_AFTER_FORMS: readonly RetryAfterForm[] = ['delay-seconds', 'http-date'];

/**
 * The Retry-After of a wait of `seconds`, in `form`; an HTTP-date is rounded up to its whole second, so it
 * never asks for less than `seconds`. `epochNowMs` is the sandbox clock's now.
 */
export function retryAfterValue(seconds: number, form: RetryAfterForm, epochNowMs: number): string {
  if (form === 'delay-seconds') return String(seconds);
  return new Date(Math.ceil((epochNowMs + seconds * 1000) / 1000) * 1000).toUTCString();
}

/**
 * The announced limit, in the form `settings.headers` names (none when off):
 * - IETF (draft-ietf-httpapi-ratelimit-headers): the sustained policy of q requests per w seconds, and
 *   what is left now (r) with the time until the bucket is full again (t);
 * - X-RateLimit-*: the quota's limit, what is left of it and when its window ends, or without a quota the
 *   bucket's size, what is left and when it is full again.
 * A refusal announces nothing left until its Retry-After. `epochNowMs` is the sandbox clock's now.
 */
export function rateLimitHeaders(
  settings: RateLimitSettings,
  admission: Admission,
  epochNowMs: number,
): Record<string, string> {
  const style = settings.headers === true ? 'ietf' : settings.headers;
  if (style === undefined || style === false) return {};
  const reset = (inMs: number) => resetValue(inMs, settings.resetForm ?? 'delta-seconds', epochNowMs);
  if (style === 'ietf') {
    const current = admission.ok
      ? `"default";r=${admission.remaining};t=${reset(admission.resetSeconds * 1000)}`
      : `"default";r=0;t=${reset(admission.retryAfterSeconds * 1000)}`;
    return { 'ratelimit-policy': `"default";q=${settings.requestsPerSecond};w=1`, ratelimit: current };
  }
  const window = !admission.ok
    ? { remaining: 0, resetMs: admission.retryAfterSeconds * 1000 }
    : (admission.quota ?? { remaining: admission.remaining, resetMs: admission.resetSeconds * 1000 });
  return {
    'x-ratelimit-limit': String(settings.quota ?? settings.burst),
    'x-ratelimit-remaining': String(window.remaining),
    'x-ratelimit-reset': reset(window.resetMs),
  };
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
    !(
      r.headers === undefined ||
      typeof r.headers === 'boolean' ||
      r.headers === 'ietf' ||
      r.headers === 'x-ratelimit'
    ) ||
    !(r.resetForm === undefined || RESET_FORMS.includes(r.resetForm)) ||
    !(r.quota === undefined || r.quota === null || (Number.isInteger(r.quota) && r.quota >= 0)) ||
    !(
      r.quotaWindowSeconds === undefined ||
      (typeof r.quotaWindowSeconds === 'number' && r.quotaWindowSeconds > 0)
    )
  )
    throw new RangeError(
      "faults.rateLimit must be null or {requestsPerSecond: > 0, burst: >= 1, per?: 'sandbox'|'token'|'client', headers?: boolean|'ietf'|'x-ratelimit', resetForm?: 'delta-seconds'|'epoch-seconds'|'epoch-ms', quota?: integer >= 0 | null, quotaWindowSeconds?: > 0}",
    );
}
