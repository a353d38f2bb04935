import { describe, expect, it } from 'vitest';
import {
  bodyExcerpt,
  BODY_EXCERPT_CHARS,
  classifyAnswer,
  UNPARSABLE_BODY,
  type ApiAnswer,
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
/** An answer whose excerpt is the body's JSON text, as the client would quote it. */
const answer = (status: number, body: unknown, retryAfter: string | null = null): ApiAnswer => ({
  status,
  body,
  excerpt: body === UNPARSABLE_BODY ? '<html>oops</html>' : bodyExcerpt(JSON.stringify(body) ?? ''),
  retryAfter,
});

describe('classifyAnswer', () => {
  it('accepts a 2xx JSON body', () => {
    expect(classifyAnswer(answer(200, { data: [] }, null), ctx)).toEqual({
      kind: 'ok',
    });
  });

  it('retries a 2xx body that is not JSON as malformed', () => {
    expect(classifyAnswer(answer(200, UNPARSABLE_BODY, null), ctx)).toMatchObject({
      kind: 'retry',
      reason: 'malformed_body',
    });
  });

  it('asks for a token refresh on 401', () => {
    expect(classifyAnswer(answer(401, errorBody('invalid_token'), null), ctx)).toEqual({
      kind: 'refresh-auth',
    });
  });

  it('makes 403 fatal with a message naming the read_phones scope', () => {
    const verdict = classifyAnswer(answer(403, errorBody('insufficient_scope'), null), ctx);
    expect(verdict).toMatchObject({ kind: 'fatal', code: 'API_FORBIDDEN' });
    expect(verdict.kind === 'fatal' && verdict.message).toContain('read_phones');
  });

  it('reads 429 as flow control (throttled), honouring its Retry-After', () => {
    expect(classifyAnswer(answer(429, null, '3'), ctx)).toEqual({
      kind: 'throttled',
      status: 429,
      delayMs: 3_000,
    });
  });

  it('falls back to backoff on 429 without Retry-After', () => {
    expect(classifyAnswer(answer(429, null, null), ctx)).toEqual({
      kind: 'throttled',
      status: 429,
      delayMs: null,
    });
  });

  it('reads a 503 with Retry-After as flow control, one without as a server error to retry', () => {
    expect(classifyAnswer(answer(503, UNPARSABLE_BODY, '2'), ctx)).toEqual({
      kind: 'throttled',
      status: 503,
      delayMs: 2_000,
    });
    expect(classifyAnswer(answer(503, UNPARSABLE_BODY, null), ctx)).toMatchObject({ kind: 'retry' });
  });

  it('waits a 429 whose Retry-After exceeds the cap for the cap only (then tries again), and gives up on another status', () => {
    const capped = { ...ctx, policy: { ...DEFAULT_RETRY_POLICY, maxRetryAfterMs: 60_000 } };
    expect(classifyAnswer(answer(429, null, '3600'), capped)).toEqual({
      kind: 'throttled',
      status: 429,
      delayMs: 60_000,
    });
    expect(classifyAnswer(answer(502, null, '3600'), capped)).toMatchObject({
      kind: 'give-up',
      code: 'API_RETRY_AFTER_TOO_LONG',
    });
  });

  it('backs off on a 429 whose Retry-After makes no sense, such as epoch milliseconds far from the clock (issue 32)', () => {
    for (const retryAfter of ['soon', '-5', '1795707166748000'])
      expect(classifyAnswer(answer(429, null, retryAfter), ctx), retryAfter).toEqual({
        kind: 'throttled',
        status: 429,
        delayMs: null,
      });
  });

  it('retries the configured server errors', () => {
    for (const status of [500, 502, 503, 504]) {
      expect(classifyAnswer(answer(status, UNPARSABLE_BODY, null), ctx)).toMatchObject({
        kind: 'retry',
        reason: 'status',
        status,
      });
    }
  });

  it('reads 410 after a cursor as an invalid cursor recognised by the configuration', () => {
    expect(classifyAnswer(answer(410, errorBody('cursor_expired', 'gone')), ctx)).toEqual({
      kind: 'invalid-cursor',
      errorCode: 'cursor_expired',
      status: 410,
      recognised: true,
      detail: 'HTTP 410: {"error":{"code":"cursor_expired","message":"gone"}}',
    });
  });

  it('reads 400 invalid_cursor after a cursor as an invalid cursor', () => {
    expect(classifyAnswer(answer(400, errorBody('invalid_cursor'), null), ctx)).toMatchObject({
      kind: 'invalid-cursor',
    });
  });

  it('reads any other 4xx after a cursor as an unusable cursor, whatever the shape of its body', () => {
    const bodies: unknown[] = [
      { problem: { kind: 'PaginationTokenExpired' } },
      'cursor expired',
      UNPARSABLE_BODY,
      null,
    ];
    for (const status of [400, 404, 409, 410, 422]) {
      for (const body of bodies) {
        expect(classifyAnswer(answer(status, body), ctx)).toMatchObject({
          kind: 'invalid-cursor',
          status,
          recognised: status === 410,
        });
      }
    }
  });

  it('never reads 401, 403 or 429 after a cursor as a cursor problem', () => {
    expect(classifyAnswer(answer(401, { odd: true }), ctx)).toEqual({ kind: 'refresh-auth' });
    expect(classifyAnswer(answer(403, { odd: true }), ctx)).toMatchObject({
      kind: 'fatal',
      code: 'API_FORBIDDEN',
    });
    expect(classifyAnswer(answer(429, { odd: true }), ctx)).toMatchObject({ kind: 'throttled' });
  });

  it('keeps a 400 of a first page (no cursor sent) fatal, naming the status and what the API said', () => {
    const verdict = classifyAnswer(answer(400, { problem: 'limit too large' }), {
      ...ctx,
      cursorSent: false,
    });
    expect(verdict).toEqual({
      kind: 'fatal',
      code: 'API_BAD_REQUEST',
      message:
        'the calls API refused the request (HTTP 400: {"problem":"limit too large"}); it is not retried',
    });
  });

  it('skips the enrichment of one call on a single-call 4xx other than 401, 404, 410 and 429', () => {
    const single = { ...ctx, endpoint: 'get_call' as const, cursorSent: false };
    for (const status of [400, 403, 422]) {
      const verdict = classifyAnswer(answer(status, 'no such thing'), single);
      expect(verdict).toMatchObject({ kind: 'skip', code: 'API_CALL_REFUSED' });
      expect(verdict.kind === 'skip' && verdict.message).toContain(`HTTP ${status}: "no such thing"`);
    }
    expect(classifyAnswer(answer(429, null), single)).toMatchObject({ kind: 'throttled' });
    expect(classifyAnswer(answer(401, null), single)).toEqual({ kind: 'refresh-auth' });
  });

  it("quotes the body of a non-JSON error, so the API's own words reach the operator", () => {
    const verdict = classifyAnswer(answer(501, UNPARSABLE_BODY), ctx);
    expect(verdict.kind === 'fatal' && verdict.message).toContain('HTTP 501: <html>oops</html>');
  });

  it('does not read a cursor problem into a request that sent no cursor', () => {
    expect(
      classifyAnswer(answer(410, errorBody('cursor_expired'), null), { ...ctx, cursorSent: false }),
    ).toMatchObject({ kind: 'fatal' });
  });

  it('reads 410 Gone on a single-call GET as a call deleted since it was listed, not a fatal error', () => {
    expect(
      classifyAnswer(answer(410, errorBody('gone'), null), {
        ...ctx,
        endpoint: 'get_call',
        cursorSent: false,
      }),
    ).toEqual({ kind: 'not-found' });
  });

  it('reads 404 on a single-call GET as not found, and on the listing as a wrong path', () => {
    expect(
      classifyAnswer(answer(404, null, null), { ...ctx, endpoint: 'get_call', cursorSent: false }),
    ).toEqual({ kind: 'not-found' });
    const verdict = classifyAnswer(answer(404, null, null), { ...ctx, cursorSent: false });
    expect(verdict).toMatchObject({ kind: 'fatal', code: 'API_NOT_FOUND' });
  });

  it('leaves a 5xx outside the policy to a later try of the location instead of stopping it', () => {
    // e.g. a proxy's 520-524 during an outage: not retried in the request, but never fatal for good.
    for (const status of [507, 520, 524]) {
      expect(classifyAnswer(answer(status, errorBody('down', 'origin down')), ctx)).toMatchObject({
        kind: 'give-up',
        code: 'API_SERVER_ERROR',
      });
    }
  });

  it('never makes a single-call 5xx fatal, so the page is tried again later', () => {
    const single = { ...ctx, endpoint: 'get_call' as const, cursorSent: false };
    expect(classifyAnswer(answer(501, null), single)).toMatchObject({
      kind: 'give-up',
      code: 'API_SERVER_ERROR',
    });
  });

  it('does not retry a 5xx outside the policy', () => {
    expect(classifyAnswer(answer(501, null, null), ctx)).toMatchObject({
      kind: 'fatal',
      code: 'API_SERVER_ERROR',
    });
  });
});

describe('bodyExcerpt', () => {
  it('keeps a short body whole, on one line', () => {
    expect(bodyExcerpt('{"error":\n  "cursor expired"}')).toBe('{"error": "cursor expired"}');
  });

  it('bounds a long body', () => {
    const excerpt = bodyExcerpt('x'.repeat(100_000));
    expect(excerpt).toBe(`${'x'.repeat(BODY_EXCERPT_CHARS)}…`);
  });

  it('removes credentials the body echoes', () => {
    const excerpt = bodyExcerpt('denied: Authorization: Bearer abcdefghijklmnop for https://user:pw@host/x');
    expect(excerpt).not.toContain('abcdefghijklmnop');
    expect(excerpt).not.toContain('user:pw');
  });
});
