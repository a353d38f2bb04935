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
 * - the common `X-RateLimit-Limit` / `X-RateLimit-Remaining` / `X-RateLimit-Reset`, whose reset may be
 *   seconds from now or a Unix time in seconds (GitHub, many gateways): a value above one year of seconds
 *   is taken for a Unix time.
 * Values that do not parse are ignored, never guessed: an API without these headers is probed (AIMD).
 */

/** What the headers of one answer announce; every field null when not announced. */
export interface Announced {
  /** Requests per second the policy allows (quota / window), when both are announced. */
  ratePerSecond: number | null;
  /** Requests left in the current window. */
  remaining: number | null;
  /** When the current window resets (ms on the caller's clock). */
  resetAtMs: number | null;
}

export type HeaderReader = (name: string) => string | null;

const ONE_YEAR_SECONDS = 365 * 24 * 3600;

function nonNegative(text: string | null | undefined): number | null {
  if (text === null || text === undefined) return null;
  const trimmed = text.trim();
  if (!/^\d+(\.\d+)?$/.test(trimmed)) return null;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : null;
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
  if (/^\d+(\.\d+)?$/.test(head)) parameters.set('_', head);
  for (const part of parts.slice(1)) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    parameters.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).trim());
  }
  return parameters;
}

function resetAt(secondsOrEpoch: number | null, nowMs: number): number | null {
  if (secondsOrEpoch === null) return null;
  if (secondsOrEpoch > ONE_YEAR_SECONDS) return Math.max(nowMs, secondsOrEpoch * 1000);
  return nowMs + secondsOrEpoch * 1000;
}

/** Reads the rate-limit fields of one answer. `nowMs` is the caller's clock. */
export function readAnnounced(header: HeaderReader, nowMs: number): Announced {
  let quota: number | null = null;
  let windowSeconds: number | null = null;
  let remaining: number | null = null;
  let resetSeconds: number | null = null;

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
    resetSeconds = nonNegative(p.get('t'));
  }
  quota ??= nonNegative(header('ratelimit-limit')) ?? nonNegative(header('x-ratelimit-limit'));
  remaining ??= nonNegative(header('ratelimit-remaining')) ?? nonNegative(header('x-ratelimit-remaining'));
  resetSeconds ??= nonNegative(header('ratelimit-reset')) ?? nonNegative(header('x-ratelimit-reset'));

  return {
    ratePerSecond:
      quota !== null && windowSeconds !== null && windowSeconds > 0 ? quota / windowSeconds : null,
    remaining,
    resetAtMs: resetAt(resetSeconds, nowMs),
  };
}
