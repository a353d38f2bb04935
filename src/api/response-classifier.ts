/**
 * What to do with one HTTP answer of the calls API: a pure function of the status, the parsed body and
 * the Retry-After header, so every rule is a unit test. The client's retry loop acts on the verdict.
 *
 * Verdicts:
 * - ok: use the body.
 * - throttled: a refusal for rate (429, or a 503 with Retry-After): flow control, not a failure. The request
 *   is sent again after `delayMs` (Retry-After, at most api.retry.maxRetryAfterMs: a longer one parks the
 *   limiter scope that long, then the request is tried again) or a backoff when null (no Retry-After, or
 *   one that makes no sense), and never uses up an attempt of api.retry.maxAttempts.
 * - retry: try again after `delayMs` (from Retry-After) or after backoff when `delayMs` is null.
 * - refresh-auth: 401; refresh the token once and try once more.
 * - invalid-cursor: a listing request that carried a cursor got a 4xx other than 401, 403 and 429. Whatever
 *   its body, the cursor is not usable (expired, invalidated, from another deployment...): the traversal
 *   restarts from its watermark, which is safe by construction. `recognised` says whether the configured
 *   api.invalidCursorStatuses / api.invalidCursorErrorCodes named it, or only the 4xx rule did. A request
 *   without a cursor is never read this way, so a restarted first page failing alike is fatal.
 * - not-found: 404 or 410 on a single-call GET (the call was deleted after it was listed).
 * - skip: any other 4xx of a single-call GET outside api.retry.statuses (401 and 429 excepted): this one
 *   call cannot be enriched; it is published unenriched (redacted) and the location goes on.
 * - give-up: retriable, but not now (a Retry-After beyond api.retry.maxRetryAfterMs, or a 5xx outside
 *   api.retry.statuses other than a listing's 501/505): the request fails with a RetriableError and the
 *   scheduler tries the location again later.
 * - fatal: retrying cannot help; `code` is stable, `message` tells a person what to change.
 */
import type { ErrorCode } from '../errors/index.js';
import { scrubSecretsInText } from '../logging/scrub-text.js';
import { readPath } from '../json/dotted-path.js';
import type { RetryPolicy } from './retry-policy.js';
import { parseRetryAfterMs } from './retry-policy.js';

export type Endpoint = 'list' | 'get_call';

/** A body that was not valid JSON (or was empty where JSON was expected). */
export const UNPARSABLE_BODY: unique symbol = Symbol('unparsable body');

export interface ApiAnswer {
  status: number;
  /** The parsed JSON body, or UNPARSABLE_BODY. */
  body: unknown;
  /** The body as text, bounded and scrubbed (bodyExcerpt): what the API said, whatever its shape. */
  excerpt: string;
  retryAfter: string | null;
}

/** Characters of a response body quoted in errors and logs. */
export const BODY_EXCERPT_CHARS = 240;

/**
 * A short, single-line, secret-scrubbed excerpt of a response body, for error messages and log lines, so
 * an operator reads what the API said ("cursor expired") whatever the body's shape (JSON of any layout,
 * HTML, plain text). Scrubbed before it is cut, so a credential is never half-kept; the caller also
 * removes the access token it sent (it knows it). Empty for an empty body.
 */
export function bodyExcerpt(text: string, limit = BODY_EXCERPT_CHARS): string {
  const flat = scrubSecretsInText(
    text
      .slice(0, limit * 8)
      .replace(/\s+/g, ' ')
      .trim(),
  );
  return flat.length > limit ? `${flat.slice(0, limit)}…` : flat;
}

export interface ClassifierContext {
  endpoint: Endpoint;
  /** Whether the request carried a cursor: only then can a 4xx mean "invalid cursor". */
  cursorSent: boolean;
  /** The API's clock when it answered (rate-limit/headers.ts answerClockMs): a Retry-After date is read on it. */
  nowMs: number;
  policy: RetryPolicy;
  invalidCursorStatuses: readonly number[];
  invalidCursorErrorCodes: readonly string[];
  errorCodeField: string;
  errorMessageField: string;
}

export type RetryReason = 'status' | 'malformed_body';

/** A refusal for rate: flow control, not a failure (429, or a 503 that says when to come back). */
export function isRateRefusal(status: number, retryAfter: string | null): boolean {
  return status === 429 || (status === 503 && retryAfter !== null);
}

export type Verdict =
  | { kind: 'ok' }
  | { kind: 'throttled'; status: number; delayMs: number | null }
  | { kind: 'retry'; reason: RetryReason; status: number; delayMs: number | null }
  | { kind: 'refresh-auth' }
  | { kind: 'invalid-cursor'; errorCode: string | null; status: number; recognised: boolean; detail: string }
  | { kind: 'not-found' }
  | { kind: 'skip'; code: ErrorCode; message: string }
  | { kind: 'give-up'; code: ErrorCode; message: string }
  | { kind: 'fatal'; code: ErrorCode; message: string };

/** The error code and message of an error body, as plain short strings (never echoing large bodies). */
export function errorSummary(
  body: unknown,
  ctx: Pick<ClassifierContext, 'errorCodeField' | 'errorMessageField'>,
): {
  code: string | null;
  message: string | null;
} {
  if (body === UNPARSABLE_BODY) return { code: null, message: null };
  const code = readPath(body, ctx.errorCodeField);
  const message = readPath(body, ctx.errorMessageField);
  return {
    code: typeof code === 'string' ? code.slice(0, 100) : null,
    message: typeof message === 'string' ? message.slice(0, 300) : null,
  };
}

/** "HTTP 400: <body excerpt>": the status and what the API said, for every error message. */
export function describeAnswer(status: number, excerpt: string): string {
  return excerpt === '' ? `HTTP ${status} with an empty body` : `HTTP ${status}: ${excerpt}`;
}

export function classifyAnswer(answer: ApiAnswer, ctx: ClassifierContext): Verdict {
  const { status, body } = answer;
  if (status >= 200 && status < 300) {
    return body === UNPARSABLE_BODY
      ? { kind: 'retry', reason: 'malformed_body', status, delayMs: null }
      : { kind: 'ok' };
  }
  const summary = errorSummary(body, ctx);
  const detail = describeAnswer(status, answer.excerpt);
  if (status === 401) return { kind: 'refresh-auth' };
  if (ctx.endpoint === 'list' && ctx.cursorSent && status >= 400 && status < 500) {
    const recognised =
      ctx.invalidCursorStatuses.includes(status) ||
      (summary.code !== null && ctx.invalidCursorErrorCodes.includes(summary.code));
    if (recognised || !CURSOR_INDEPENDENT_STATUSES.has(status))
      return { kind: 'invalid-cursor', errorCode: summary.code, status, recognised, detail };
  }
  // 404 or 410 Gone on GET {callPath}: the call was deleted after it was listed. Fatal would stop the
  // whole location for good because of one deleted call.
  if ((status === 404 || status === 410) && ctx.endpoint === 'get_call') return { kind: 'not-found' };
  if (status === 403 && ctx.endpoint === 'list') {
    return {
      kind: 'fatal',
      code: 'API_FORBIDDEN',
      message: `the calls API refused access (${detail}): the grant needs scope read_phones and access to this location`,
    };
  }
  if (isRateRefusal(status, answer.retryAfter)) {
    const delayMs = parseRetryAfterMs(answer.retryAfter, ctx.nowMs);
    return {
      kind: 'throttled',
      status,
      delayMs: delayMs === null ? null : Math.min(delayMs, ctx.policy.maxRetryAfterMs),
    };
  }
  if (ctx.policy.statuses.includes(status)) {
    const retryAfterMs = parseRetryAfterMs(answer.retryAfter, ctx.nowMs);
    if (retryAfterMs !== null && retryAfterMs > ctx.policy.maxRetryAfterMs) {
      return {
        kind: 'give-up',
        code: 'API_RETRY_AFTER_TOO_LONG',
        message: `the calls API asked to wait ${Math.round(retryAfterMs / 1000)} s (${detail}), more than api.retry.maxRetryAfterMs`,
      };
    }
    return {
      kind: 'retry',
      reason: 'status',
      status,
      delayMs: retryAfterMs,
    };
  }
  if (ctx.endpoint === 'get_call' && status >= 400 && status < 500 && status !== 429) {
    return {
      kind: 'skip',
      code: 'API_CALL_REFUSED',
      message: `the calls API refused the single-call request (${detail})`,
    };
  }
  if (status === 404 && ctx.endpoint === 'list') {
    return {
      kind: 'fatal',
      code: 'API_NOT_FOUND',
      message: `the listing path was not found (${detail}): check api.baseUrl and api.listPath`,
    };
  }
  // A single call's 5xx is never fatal: the page fails (retriable) and is fetched again later, so the call
  // is neither lost nor allowed to stop the location.
  if (status >= 500 && (ctx.endpoint === 'get_call' || !PERMANENT_SERVER_STATUSES.has(status))) {
    // A server-side failure outside api.retry.statuses (e.g. a proxy's 520-524) is not retried within the
    // request, but it says nothing permanent about the request: the location tries again later rather
    // than stopping for good.
    return {
      kind: 'give-up',
      code: 'API_SERVER_ERROR',
      message: `the calls API failed (${detail}); trying again later`,
    };
  }
  return {
    kind: 'fatal',
    code: status >= 500 ? 'API_SERVER_ERROR' : 'API_BAD_REQUEST',
    message: `the calls API refused the request (${detail}); it is not retried`,
  };
}

/**
 * 4xx statuses that say nothing about the cursor a listing request carried: 401 (the token; refreshed),
 * 403 (the grant's scope or location; fatal) and 429 (rate limiting; retried).
 */
const CURSOR_INDEPENDENT_STATUSES = new Set([401, 403, 429]);

/** 5xx statuses that do not change by waiting: the server does not support the request at all. */
const PERMANENT_SERVER_STATUSES = new Set([501, 505]);
