/**
 * What to do with one HTTP answer of the calls API: a pure function of the status, the parsed body and
 * the Retry-After header, so every rule is a unit test. The client's retry loop acts on the verdict.
 *
 * Verdicts:
 * - ok: use the body.
 * - retry: try again after `delayMs` (from Retry-After) or after backoff when `delayMs` is null.
 * - refresh-auth: 401; refresh the token once and try once more.
 * - invalid-cursor: the cursor we sent is expired or invalid; the traversal restarts from its watermark.
 * - not-found: 404 or 410 on a single-call GET (the call was deleted after it was listed).
 * - give-up: retriable, but not now (a Retry-After beyond api.retry.maxRetryAfterMs, or a 5xx outside
 *   api.retry.statuses other than 501/505): the request fails with a RetriableError and the scheduler
 *   tries the location again later.
 * - fatal: retrying cannot help; `code` is stable, `message` tells a person what to change.
 */
import { readPath } from './body-path.js';
import type { RetryPolicy } from './retry-policy.js';
import { parseRetryAfterMs } from './retry-policy.js';

export type Endpoint = 'list' | 'get_call';

/** A body that was not valid JSON (or was empty where JSON was expected). */
export const UNPARSABLE_BODY: unique symbol = Symbol('unparsable body');

export interface ApiAnswer {
  status: number;
  /** The parsed JSON body, or UNPARSABLE_BODY. */
  body: unknown;
  retryAfter: string | null;
}

export interface ClassifierContext {
  endpoint: Endpoint;
  /** Whether the request carried a cursor: only then can a 4xx mean "invalid cursor". */
  cursorSent: boolean;
  nowMs: number;
  policy: RetryPolicy;
  invalidCursorStatuses: readonly number[];
  invalidCursorErrorCodes: readonly string[];
  errorCodeField: string;
  errorMessageField: string;
}

export type RetryReason = 'rate_limited' | 'status' | 'malformed_body';

export type Verdict =
  | { kind: 'ok' }
  | { kind: 'retry'; reason: RetryReason; status: number; delayMs: number | null }
  | { kind: 'refresh-auth' }
  | { kind: 'invalid-cursor'; errorCode: string | null }
  | { kind: 'not-found' }
  | { kind: 'give-up'; code: string; message: string }
  | { kind: 'fatal'; code: string; message: string };

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

function describe(status: number, summary: { code: string | null; message: string | null }): string {
  const parts = [`HTTP ${status}`];
  if (summary.code !== null) parts.push(summary.code);
  if (summary.message !== null) parts.push(`"${summary.message}"`);
  return parts.join(' ');
}

export function classifyAnswer(answer: ApiAnswer, ctx: ClassifierContext): Verdict {
  const { status, body } = answer;
  if (status >= 200 && status < 300) {
    return body === UNPARSABLE_BODY
      ? { kind: 'retry', reason: 'malformed_body', status, delayMs: null }
      : { kind: 'ok' };
  }
  const summary = errorSummary(body, ctx);
  if (status === 401) return { kind: 'refresh-auth' };
  if (status === 403) {
    return {
      kind: 'fatal',
      code: 'API_FORBIDDEN',
      message: `the calls API refused access (${describe(status, summary)}): the grant needs scope read_phones and access to this location`,
    };
  }
  if (
    ctx.endpoint === 'list' &&
    ctx.cursorSent &&
    (ctx.invalidCursorStatuses.includes(status) ||
      (status >= 400 &&
        status < 500 &&
        summary.code !== null &&
        ctx.invalidCursorErrorCodes.includes(summary.code)))
  ) {
    return { kind: 'invalid-cursor', errorCode: summary.code };
  }
  // 404 or 410 Gone on GET {callPath}: the call was deleted after it was listed. Fatal would stop the
  // whole location for good because of one deleted call.
  if ((status === 404 || status === 410) && ctx.endpoint === 'get_call') return { kind: 'not-found' };
  if (ctx.policy.statuses.includes(status)) {
    const retryAfterMs = parseRetryAfterMs(answer.retryAfter, ctx.nowMs);
    if (retryAfterMs !== null && retryAfterMs > ctx.policy.maxRetryAfterMs) {
      return {
        kind: 'give-up',
        code: 'API_RETRY_AFTER_TOO_LONG',
        message: `the calls API asked to wait ${Math.round(retryAfterMs / 1000)} s (${describe(status, summary)}), more than api.retry.maxRetryAfterMs`,
      };
    }
    return {
      kind: 'retry',
      reason: status === 429 ? 'rate_limited' : 'status',
      status,
      delayMs: retryAfterMs,
    };
  }
  if (status === 404 && ctx.endpoint === 'list') {
    return {
      kind: 'fatal',
      code: 'API_NOT_FOUND',
      message: `the listing path was not found (${describe(status, summary)}): check api.baseUrl and api.listPath`,
    };
  }
  if (status >= 500 && !PERMANENT_SERVER_STATUSES.has(status)) {
    // A server-side failure outside api.retry.statuses (e.g. a proxy's 520-524) is not retried within the
    // request, but it says nothing permanent about the request: the location tries again later rather
    // than stopping for good.
    return {
      kind: 'give-up',
      code: 'API_SERVER_ERROR',
      message: `the calls API failed (${describe(status, summary)}); trying again later`,
    };
  }
  return {
    kind: 'fatal',
    code: status >= 500 ? 'API_SERVER_ERROR' : 'API_BAD_REQUEST',
    message: `the calls API refused the request (${describe(status, summary)}); it is not retried`,
  };
}

/** 5xx statuses that do not change by waiting: the server does not support the request at all. */
const PERMANENT_SERVER_STATUSES = new Set([501, 505]);
