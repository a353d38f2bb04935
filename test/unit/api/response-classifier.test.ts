import { describe, expect, it } from 'vitest';
import {
  classifyAnswer,
  UNPARSABLE_BODY,
  type ClassifierContext,
} from '../../../src/api/response-classifier.js';
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';

const now = Date.UTC(2024, 0, 1);
const ctx: ClassifierContext = {
  endpoint: 'list',
  cursorSent: true,
  nowMs: now,
  policy: DEFAULT_RETRY_POLICY,
  invalidCursorStatuses: [410],
  invalidCursorErrorCodes: ['invalid_cursor', 'cursor_expired'],
  errorCodeField: 'error.code',
  errorMessageField: 'error.message',
};
const errorBody = (code: string, message = 'm') => ({ error: { code, message } });

describe('classifyAnswer', () => {
  it('accepts a 2xx JSON body', () => {
    expect(classifyAnswer({ status: 200, body: { data: [] }, retryAfter: null }, ctx)).toEqual({
      kind: 'ok',
    });
  });

  it('retries a 2xx body that is not JSON as malformed', () => {
    expect(classifyAnswer({ status: 200, body: UNPARSABLE_BODY, retryAfter: null }, ctx)).toMatchObject({
      kind: 'retry',
      reason: 'malformed_body',
    });
  });

  it('asks for a token refresh on 401', () => {
    expect(classifyAnswer({ status: 401, body: errorBody('invalid_token'), retryAfter: null }, ctx)).toEqual({
      kind: 'refresh-auth',
    });
  });

  it('makes 403 fatal with a message naming the read_phones scope', () => {
    const verdict = classifyAnswer(
      { status: 403, body: errorBody('insufficient_scope'), retryAfter: null },
      ctx,
    );
    expect(verdict).toMatchObject({ kind: 'fatal', code: 'API_FORBIDDEN' });
    expect(verdict.kind === 'fatal' && verdict.message).toContain('read_phones');
  });

  it('honours Retry-After on 429 and names it rate limiting', () => {
    expect(classifyAnswer({ status: 429, body: null, retryAfter: '3' }, ctx)).toEqual({
      kind: 'retry',
      reason: 'rate_limited',
      status: 429,
      delayMs: 3_000,
    });
  });

  it('falls back to backoff on 429 without Retry-After', () => {
    expect(classifyAnswer({ status: 429, body: null, retryAfter: null }, ctx)).toMatchObject({
      kind: 'retry',
      delayMs: null,
    });
  });

  it('gives up for now when Retry-After exceeds the cap', () => {
    const verdict = classifyAnswer(
      { status: 429, body: null, retryAfter: '3600' },
      { ...ctx, policy: { ...DEFAULT_RETRY_POLICY, maxRetryAfterMs: 60_000 } },
    );
    expect(verdict).toMatchObject({ kind: 'give-up', code: 'API_RETRY_AFTER_TOO_LONG' });
  });

  it('retries the configured server errors', () => {
    for (const status of [500, 502, 503, 504]) {
      expect(classifyAnswer({ status, body: UNPARSABLE_BODY, retryAfter: null }, ctx)).toMatchObject({
        kind: 'retry',
        reason: 'status',
        status,
      });
    }
  });

  it('reads 410 after a cursor as an invalid cursor', () => {
    expect(classifyAnswer({ status: 410, body: errorBody('cursor_expired'), retryAfter: null }, ctx)).toEqual(
      { kind: 'invalid-cursor', errorCode: 'cursor_expired' },
    );
  });

  it('reads 400 invalid_cursor after a cursor as an invalid cursor', () => {
    expect(
      classifyAnswer({ status: 400, body: errorBody('invalid_cursor'), retryAfter: null }, ctx),
    ).toMatchObject({ kind: 'invalid-cursor' });
  });

  it('keeps any other 400 fatal, even after a cursor', () => {
    expect(
      classifyAnswer({ status: 400, body: errorBody('invalid_limit'), retryAfter: null }, ctx),
    ).toMatchObject({ kind: 'fatal', code: 'API_BAD_REQUEST' });
  });

  it('does not read a cursor problem into a request that sent no cursor', () => {
    expect(
      classifyAnswer(
        { status: 410, body: errorBody('cursor_expired'), retryAfter: null },
        { ...ctx, cursorSent: false },
      ),
    ).toMatchObject({ kind: 'fatal' });
  });

  it('reads 410 Gone on a single-call GET as a call deleted since it was listed, not a fatal error', () => {
    expect(
      classifyAnswer(
        { status: 410, body: errorBody('gone'), retryAfter: null },
        { ...ctx, endpoint: 'get_call', cursorSent: false },
      ),
    ).toEqual({ kind: 'not-found' });
  });

  it('reads 404 on a single-call GET as not found, and on the listing as a wrong path', () => {
    expect(
      classifyAnswer(
        { status: 404, body: null, retryAfter: null },
        { ...ctx, endpoint: 'get_call', cursorSent: false },
      ),
    ).toEqual({ kind: 'not-found' });
    const verdict = classifyAnswer(
      { status: 404, body: null, retryAfter: null },
      { ...ctx, cursorSent: false },
    );
    expect(verdict).toMatchObject({ kind: 'fatal', code: 'API_NOT_FOUND' });
  });

  it('leaves a 5xx outside the policy to a later try of the location instead of stopping it', () => {
    // e.g. a proxy's 520-524 during an outage: not retried in the request, but never fatal for good.
    for (const status of [507, 520, 524]) {
      expect(
        classifyAnswer({ status, body: errorBody('down', 'origin down'), retryAfter: null }, ctx),
      ).toMatchObject({
        kind: 'give-up',
        code: 'API_SERVER_ERROR',
      });
    }
  });

  it('does not retry a 5xx outside the policy', () => {
    expect(classifyAnswer({ status: 501, body: null, retryAfter: null }, ctx)).toMatchObject({
      kind: 'fatal',
      code: 'API_SERVER_ERROR',
    });
  });
});
