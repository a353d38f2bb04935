/**
 * What an API announces about its rate limit, read from response headers. Pure functions: the caller
 * passes a header reader and the time.
 *
 * Read, in this order of preference:
 * - the IETF fields (draft-ietf-httpapi-ratelimit-headers, structured fields):
 *   `RateLimit-Policy: "default";q=100;w=60` (quota q per window of w seconds) and
 *   `RateLimit: "default";r=50;t=30` (r requests remain, t seconds until the quota resets);
 * - the earlier drafts' `RateLimit-Limit` / `RateLimit-Remaining` / `RateLimit-Reset` (and a
 *   `RateLimit-Policy` of the form `100;w=60`);
 * - the common `X-RateLimit-Limit` / `X-RateLimit-Remaining` / `X-RateLimit-Reset`.
 * Rates and counts that do not parse are ignored, never guessed: an API without these headers is probed
 * (AIMD).
 *
 * A reset (`t`, `RateLimit-Reset`, `X-RateLimit-Reset`) and a `Retry-After` say when to come back, and APIs
 * write that in several forms; one rule, `readWait`, reads them all (see there). A value it cannot read
 * as a plausible time is `implausible`: the caller backs off instead and says so once, rather than hold
 * a scope for 56,000 years (a reset in epoch milliseconds read as epoch seconds).
 */

/** How a wait was written: seconds from now, a Unix time in seconds or milliseconds, or a date. */
export type WaitForm = 'delta-seconds' | 'epoch-seconds' | 'epoch-ms' | 'http-date' | 'iso-date';

/**
 * One header's wait, read against the clock: hold for `holdMs` (0: the time has come already), or
 * `implausible` (no form reads it as a time within a year from now, nor within a day in the past).
 * `holdMs` is what the API asked for, not yet capped (the scope caps every hold at
 * api.retry.maxRetryAfterMs).
 */
export type WaitReading = Hold | { kind: 'implausible'; raw: string };
export interface Hold {
  kind: 'hold';
  holdMs: number;
  form: WaitForm;
}

/** A reading and the header it came from (lower case). */
export type HeaderWait = WaitReading & { header: string };

/** What the headers of one answer announce; every field null when not announced. */
export interface Announced {
  /** Requests per second the policy allows (quota / window), when both are announced. */
  ratePerSecond: number | null;
  /** Requests left in the current window. */
  remaining: number | null;
  /** When the current window resets, from the first reset header present. */
  reset: HeaderWait | null;
}

export type HeaderReader = (name: string) => string | null;

/**
 * Clocks apart by at most this much are taken as one: a Date header has a resolution of one second, and an
 * answer takes a while to arrive.
 */
const SAME_CLOCK_MS = 2_000;

/**
 * The API's clock when it answered, for reading the waits it writes as a time (a Unix time, a date): its
 * `Date` header (RFC 9110 6.6.1) when that reads as a time apart from `localNowMs` by more than SAME_CLOCK_MS and
 * less than a year; else `localNowMs`. An API whose clock is hours off ours (or set in the wrong zone) writes
 * its resets and Retry-After dates on its own clock: read against ours they would ask for those hours, and the
 * scope would be parked again and again at api.retry.maxRetryAfterMs. Read against its Date they ask for what
 * the API means (up to a second longer, the header's resolution: the safe side). An API with no Date header, or
 * one that does not parse, is read against our clock, as before.
 */
export function answerClockMs(date: string | null | undefined, localNowMs: number): number {
  if (date === null || date === undefined || !HTTP_DATE.test(date)) return localNowMs;
  const apiNowMs = Date.parse(HAS_ZONE.test(date) ? date : `${date} GMT`);
  if (!Number.isFinite(apiNowMs)) return localNowMs;
  const apart = Math.abs(apiNowMs - localNowMs);
  return apart > SAME_CLOCK_MS && apart < ONE_YEAR_MS ? apiNowMs : localNowMs;
}

/** A number of seconds up to a year is a delay; a larger one is a time (no API asks to wait a year). */
const ONE_YEAR_MS = 365 * 24 * 3600 * 1000;
/**
 * A time up to a day in the past is a reset that has happened already (clocks apart, an answer that took
 * long to read): no hold. Further back, the reading is wrong, or so is the API's clock.
 */
const PAST_TOLERANCE_MS = 24 * 3600 * 1000;

const DECIMAL = /^\d+(\.\d+)?$/;
/** An HTTP-date (RFC 9110 5.6.7: IMF-fixdate, RFC 850, asctime) names a weekday or a month. */
const HTTP_DATE = /\b(mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b/i;
/** An HTTP-date's time zone; asctime has none and is GMT. */
const HAS_ZONE = /\b(gmt|utc|ut|z)\b|[+-]\d{2}:?\d{2}\s*$/i;
/** An ISO 8601 / RFC 3339 date-time with its offset: no time zone guessed. */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(z|[+-]\d{2}:\d{2})$/i;

function nonNegative(text: string | null | undefined): number | null {
  if (text === null || text === undefined) return null;
  const trimmed = text.trim();
  if (!DECIMAL.test(trimmed)) return null;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : null;
}

/** `atMs` read as a time: a hold until then when it is plausible, else null. */
function holdUntil(atMs: number, nowMs: number, form: WaitForm): Hold | null {
  if (!Number.isFinite(atMs) || atMs < nowMs - PAST_TOLERANCE_MS || atMs > nowMs + ONE_YEAR_MS) return null;
  return { kind: 'hold', holdMs: Math.max(0, Math.ceil(atMs - nowMs)), form };
}

/** A bare number: a delay in seconds up to a year, else a Unix time in seconds, else one in milliseconds. */
function readNumber(value: number, nowMs: number): Hold | null {
  if (value * 1000 <= ONE_YEAR_MS)
    return { kind: 'hold', holdMs: Math.ceil(value * 1000), form: 'delta-seconds' };
  return holdUntil(value * 1000, nowMs, 'epoch-seconds') ?? holdUntil(value, nowMs, 'epoch-ms');
}

function readDate(text: string, nowMs: number): Hold | null {
  if (ISO_DATE.test(text)) return holdUntil(Date.parse(text), nowMs, 'iso-date');
  if (!HTTP_DATE.test(text)) return null;
  return holdUntil(Date.parse(HAS_ZONE.test(text) ? text : `${text} GMT`), nowMs, 'http-date');
}

/**
 * Reads a wait however an API wrote it: delay-seconds (`30`, also `1.5`), a Unix time in seconds
 * (`1795712400`) or milliseconds (`1795712400000`), an HTTP-date (`Thu, 26 Nov 2026 17:00:00 GMT`, and
 * the obsolete RFC 850 and asctime forms) or an ISO 8601 date-time with its offset. Leading and trailing
 * whitespace is ignored.
 *
 * Plausibility, against `nowMs`: a number up to a year of seconds is a delay (a Unix time is never that
 * small); a larger one is a time, in seconds or else milliseconds, and so is a date: a time is taken when
 * it falls within a year from now (a day in the past counts as now, no hold). Anything else is
 * `implausible`: negative, non-numeric, exponents, an empty value, a time further away either way.
 *
 * Several values (`30, 60`: a field sent twice and joined by a proxy) are read each; all must be
 * plausible, and the longest wait is taken.
 */
export function readWait(raw: string, nowMs: number): WaitReading {
  const text = raw.trim();
  const parts = text.split(',').map((part) => part.trim());
  if (parts.length > 1 && parts.every((part) => DECIMAL.test(part))) {
    let longest: Hold | null = null;
    for (const part of parts) {
      const reading = readNumber(Number(part), nowMs);
      if (reading === null) return { kind: 'implausible', raw };
      if (longest === null || reading.holdMs > longest.holdMs) longest = reading;
    }
    return longest ?? { kind: 'implausible', raw };
  }
  const reading = DECIMAL.test(text) ? readNumber(Number(text), nowMs) : readDate(text, nowMs);
  return reading ?? { kind: 'implausible', raw };
}

/** The Retry-After of an answer (RFC 9110 10.2.3, and the other forms readWait reads); null when absent. */
export function readRetryAfter(value: string | null | undefined, nowMs: number): WaitReading | null {
  return value === null || value === undefined ? null : readWait(value, nowMs);
}

/** The wait a reading asks for in ms, or null when there is none or it is implausible (back off instead). */
export function waitMs(reading: WaitReading | null): number | null {
  return reading?.kind === 'hold' ? reading.holdMs : null;
}

/**
 * The parameters of the first item of a structured-field list such as `"default";q=100;w=60, "x";q=5`
 * (RFC 9651 dictionary members or list items with parameters), as a map name -> raw value. A bare
 * number as the item (`100;w=60`, the earlier drafts) is returned under the name `_`.
 */
export function firstItemParameters(value: string): Map<string, string> {
  const first = value.split(',')[0] ?? '';
  const parts = first.split(';').map((p) => p.trim());
  const parameters = new Map<string, string>();
  const head = parts[0] ?? '';
  if (DECIMAL.test(head)) parameters.set('_', head);
  for (const part of parts.slice(1)) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    parameters.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  return parameters;
}

/** The first reset announced, in order of preference: the IETF `t`, `RateLimit-Reset`, `X-RateLimit-Reset`. */
function announcedReset(header: HeaderReader, ietfT: string | undefined, nowMs: number): HeaderWait | null {
  if (ietfT !== undefined) return { header: 'ratelimit', ...readWait(ietfT, nowMs) };
  for (const name of ['ratelimit-reset', 'x-ratelimit-reset']) {
    const value = header(name);
    if (value !== null) return { header: name, ...readWait(value, nowMs) };
  }
  return null;
}

/** Every header readAnnounced reads: an answer with none of them announces nothing. */
const RATE_LIMIT_HEADERS = [
  'ratelimit-policy',
  'ratelimit',
  'ratelimit-limit',
  'x-ratelimit-limit',
  'ratelimit-remaining',
  'x-ratelimit-remaining',
  'ratelimit-reset',
  'x-ratelimit-reset',
] as const;

/** What an answer without rate-limit headers announces (most answers of most APIs): one shared object. */
const NOTHING_ANNOUNCED: Announced = Object.freeze({ ratePerSecond: null, remaining: null, reset: null });

/**
 * Reads the rate-limit fields of one answer. `nowMs` is the caller's clock. An answer with none of the
 * headers (every answer of an API that announces nothing) is told so after one look at each name.
 */
export function readAnnounced(header: HeaderReader, nowMs: number): Announced {
  if (RATE_LIMIT_HEADERS.every((name) => header(name) === null)) return NOTHING_ANNOUNCED;
  let quota: number | null = null;
  let windowSeconds: number | null = null;
  let remaining: number | null = null;
  let ietfT: string | undefined;

  const policy = header('ratelimit-policy');
  if (policy !== null) {
    const p = firstItemParameters(policy);
    quota = nonNegative(p.get('q') ?? p.get('_'));
    windowSeconds = nonNegative(p.get('w'));
  }
  const current = header('ratelimit');
  if (current !== null) {
    const p = firstItemParameters(current);
    remaining = nonNegative(p.get('r'));
    ietfT = p.get('t');
  }
  quota ??= nonNegative(header('ratelimit-limit')) ?? nonNegative(header('x-ratelimit-limit'));
  remaining ??= nonNegative(header('ratelimit-remaining')) ?? nonNegative(header('x-ratelimit-remaining'));

  return {
    ratePerSecond:
      quota !== null && windowSeconds !== null && windowSeconds > 0 ? quota / windowSeconds : null,
    remaining,
    reset: announcedReset(header, ietfT, nowMs),
  };
}
