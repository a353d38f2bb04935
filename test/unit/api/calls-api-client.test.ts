import { describe, expect, it } from 'vitest';
import { CallsApiClient, listQuery } from '../../../src/api/calls-api-client.js';
import { InvalidCursorError } from '../../../src/sync/ports.js';
import type { Clock } from '../../../src/time/clock.js';
import type { HttpClient, HttpRequest, HttpResponse } from '../../../src/api/http-transport.js';
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';
import type { TokenProvider } from '../../../src/api/token-provider.js';
import { apiSchema } from '../../../src/config/schema.js';
import { ConnectorError, FatalError, RetriableError, SkippableError } from '../../../src/errors/index.js';
import { testMetrics } from '../../support/metrics.js';
import { RecordingClock } from '../../support/clock.js';
import { counterValue } from '../../support/counters.js';

type Step = { status: number; body: string; retryAfter?: string } | Error;

/** An HttpClient answering from a script, recording what it was sent. */
function scripted(steps: Step[]): HttpClient & { sent: HttpRequest[] } {
  const sent: HttpRequest[] = [];
  return {
    sent,
    async send(request) {
      sent.push(request);
      const step = steps.shift();
      if (step === undefined) throw new Error('script exhausted');
      if (step instanceof Error) throw step;
      const response: HttpResponse = {
        status: step.status,
        body: step.body,
        header: (name) => (name === 'retry-after' ? (step.retryAfter ?? null) : null),
      };
      return response;
    },
    async close() {},
  };
}

const page = (nextCursor: string | null, items: unknown[] = []) => ({
  status: 200,
  body: JSON.stringify({ data: items, metadata: { nextCursor } }),
});

function tokens(): TokenProvider & { refreshed: string[] } {
  const refreshed: string[] = [];
  let current = 't1';
  return {
    refreshed,
    async accessToken() {
      return current;
    },
    async refreshAfterRejection(rejected) {
      refreshed.push(rejected);
      current = `t${refreshed.length + 1}`;
      return current;
    },
  };
}

function setup(steps: Step[], retry = { ...DEFAULT_RETRY_POLICY, maxAttempts: 3 }) {
  const http = scripted(steps);
  const clock = new RecordingClock(1_700_000_000_000, 0.5);
  const waits = clock.sleeps;
  const metrics = testMetrics();
  const tokenProvider = tokens();
  const settings = { ...apiSchema.parse({ baseUrl: 'https://api.test' }), retry };
  const client = new CallsApiClient({ http, tokens: tokenProvider, settings, metrics, clock });
  return { client, http, waits, metrics, tokenProvider };
}

const first = { kind: 'first', locationUid: 'L', since: null, order: 'asc', limit: 100 } as const;

describe('listQuery', () => {
  it('sends order, location, limit and since on the first page, and the cursor alone with limit after', () => {
    expect(listQuery({ ...first, since: '2024-01-01T00:00:00Z' })).toEqual({
      order: 'asc',
      locationUid: 'L',
      limit: '100',
      since: '2024-01-01T00:00:00Z',
    });
    expect(listQuery(first)).not.toHaveProperty('since');
    expect(listQuery({ kind: 'next', locationUid: 'L', cursor: 'abc', limit: 100 })).toEqual({
      cursor: 'abc',
      limit: '100',
    });
  });
});

describe('CallsApiClient', () => {
  it('sends the bearer token in the configured header and decodes the page into mapped items', async () => {
    const { client, http } = setup([
      page('c1', [{ uid: 'a', updatedAt: '2024-01-01T00:00:00Z' }, { uid: 'b' }]),
    ]);
    await expect(client.listPage(first)).resolves.toMatchObject({
      items: [
        { ok: true, call: { uid: 'a', locationUid: first.locationUid, updatedAt: '2024-01-01T00:00:00Z' } },
        { ok: false, error: { code: 'ITEM_BAD_UPDATED_AT' }, position: null },
      ],
      nextCursor: 'c1',
    });
    expect(http.sent[0]?.headers.Authorization).toBe('Bearer t1');
    expect(http.sent[0]?.path).toBe('/v4/calls');
  });

  it('retries 5xx and network errors with backoff, counting each retry', async () => {
    const { client, waits, metrics } = setup([
      { status: 503, body: '' },
      new RetriableError('API_NETWORK', 'reset'),
      page(null),
    ]);
    await expect(client.listPage(first)).resolves.toMatchObject({ nextCursor: null });
    expect(waits).toHaveLength(2);
    expect(await counterValue(metrics.apiRetries)).toBe(2);
  });

  it('honours Retry-After on 429 and counts the rate limiting', async () => {
    const { client, waits, metrics } = setup([{ status: 429, body: '', retryAfter: '2' }, page(null)]);
    await client.listPage(first);
    expect(waits).toEqual([2_000]);
    expect(await counterValue(metrics.apiRateLimited)).toBe(1);
  });

  it('never spends an attempt on 429s: more refusals than api.retry.maxAttempts, then the answer', async () => {
    // maxAttempts is 3: five 429s (flow control), one 500 (an attempt), then the page.
    const refusals = Array.from({ length: 5 }, () => ({ status: 429, body: '', retryAfter: '1' }));
    const { client, waits, metrics } = setup([...refusals, { status: 500, body: '' }, page(null)]);
    await expect(client.listPage(first)).resolves.toMatchObject({ nextCursor: null });
    expect(waits.slice(0, 5)).toEqual([1_000, 1_000, 1_000, 1_000, 1_000]);
    expect(await counterValue(metrics.apiRateLimited)).toBe(5);
  });

  it('does not wait itself after a refusal when the transport holds the scope, and routes grant and priority', async () => {
    const http = Object.assign(
      scripted([
        { status: 429, body: '', retryAfter: '30' },
        { status: 503, body: '', retryAfter: '5' },
        page(null),
      ]),
      { pacesRefusals: true },
    );
    const clock = new RecordingClock(0, 0.5);
    const client = new CallsApiClient({
      http,
      grant: 'acme',
      tokens: tokens(),
      settings: { ...apiSchema.parse({ baseUrl: 'https://api.test' }), retry: DEFAULT_RETRY_POLICY },
      metrics: testMetrics(),
      clock,
    });
    await client.listPage(first, undefined, { priority: 'backfill' });
    expect(clock.sleeps).toEqual([]);
    expect(http.sent.map((r) => [r.grant, r.priority])).toEqual([
      ['acme', 'backfill'],
      ['acme', 'backfill'],
      ['acme', 'backfill'],
    ]);
  });

  it('gives up with a retriable error after maxAttempts', async () => {
    const { client, http } = setup([
      { status: 500, body: '' },
      { status: 500, body: '' },
      { status: 500, body: '' },
    ]);
    const error = await client.listPage(first).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetriableError);
    expect((error as ConnectorError).code).toBe('API_UNAVAILABLE');
    expect(http.sent).toHaveLength(3);
  });

  it('retries a malformed page, then fails fatally', async () => {
    const { client } = setup([
      { status: 200, body: 'not json' },
      { status: 200, body: '{"data":{}}' },
      { status: 200, body: '{"items":[]}' },
    ]);
    const error = await client.listPage(first).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FatalError);
    expect((error as ConnectorError).code).toBe('API_MALFORMED_BODY');
  });

  it('recovers when a malformed page is followed by a good one', async () => {
    const { client } = setup([{ status: 200, body: '<html>' }, page(null)]);
    await expect(client.listPage(first)).resolves.toMatchObject({ nextCursor: null });
  });

  it('refreshes the token once on 401 and retries with the new token', async () => {
    const { client, http, tokenProvider } = setup([{ status: 401, body: '' }, page(null)]);
    await client.listPage(first);
    expect(tokenProvider.refreshed).toEqual(['t1']);
    expect(http.sent[1]?.headers.Authorization).toBe('Bearer t2');
  });

  it('fails for now (retriable) when the refreshed token is rejected too', async () => {
    const { client, tokenProvider } = setup([
      { status: 401, body: '' },
      { status: 401, body: '{"fault":"token revoked upstream"}' },
    ]);
    const error = await client.listPage(first).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'API_UNAUTHORIZED', disposition: 'retriable' });
    expect((error as Error).message).toContain('HTTP 401: {"fault":"token revoked upstream"}');
    expect(tokenProvider.refreshed).toHaveLength(1);
  });

  it('fails fatally on 403 without retrying', async () => {
    const { client, http } = setup([
      { status: 403, body: '{"error":{"code":"insufficient_scope","message":"no"}}' },
    ]);
    await expect(client.listPage(first)).rejects.toMatchObject({
      code: 'API_FORBIDDEN',
      disposition: 'fatal',
    });
    expect(http.sent).toHaveLength(1);
  });

  it('reports an expired cursor as InvalidCursorError', async () => {
    const { client } = setup([{ status: 410, body: '{"error":{"code":"cursor_expired","message":"gone"}}' }]);
    await expect(
      client.listPage({ kind: 'next', locationUid: 'L', cursor: 'old', limit: 10 }),
    ).rejects.toBeInstanceOf(InvalidCursorError);
  });

  it('reports a 400 of an unknown shape after a cursor as an unusable cursor, quoting the body', async () => {
    const { client, http } = setup([{ status: 400, body: 'Pagination token has expired.\n' }]);
    const error = await client
      .listPage({ kind: 'next', locationUid: 'L', cursor: 'old', limit: 10 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidCursorError);
    expect((error as InvalidCursorError).details).toMatchObject({
      status: 400,
      recognised: false,
      apiCode: null,
      detail: 'HTTP 400: Pagination token has expired.',
    });
    expect((error as Error).message).toContain('HTTP 400: Pagination token has expired.');
    expect(http.sent).toHaveLength(1);
  });

  it('names the status and the body of a server error that outlasted the retries', async () => {
    const outage = { status: 503, body: '<h1>Service Unavailable</h1> upstream maintenance' };
    const { client } = setup([outage, outage, outage]);
    const error = await client.listPage(first).catch((e: unknown) => e);
    expect((error as Error).message).toContain('HTTP 503: <h1>Service Unavailable</h1> upstream maintenance');
  });

  it('makes a single-call 4xx a skippable error of that call, not a stop of the location', async () => {
    const { client, http } = setup([{ status: 422, body: '{"detail":"call is archived"}' }]);
    const error = await client.getCall('c1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SkippableError);
    expect(error).toMatchObject({ code: 'API_CALL_REFUSED' });
    expect((error as Error).message).toContain('HTTP 422: {"detail":"call is archived"}');
    expect(http.sent).toHaveLength(1);
  });

  it('makes a single call too large to read a skippable error of that call at once, not an endless page retry', async () => {
    const tooLarge = new RetriableError(
      'API_RESPONSE_TOO_LARGE',
      'the response of /v4/calls/c1 exceeds api.maxResponseBytes (10)',
    );
    const { client, http } = setup([tooLarge]);
    const error = await client.getCall('c1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SkippableError);
    expect(error).toMatchObject({ code: 'API_CALL_TOO_LARGE' });
    expect(http.sent).toHaveLength(1);
  });

  it('makes a single-call body still malformed after the retries retriable, so the page is tried again', async () => {
    const { client } = setup([
      { status: 200, body: 'oops' },
      { status: 200, body: '<html>' },
      { status: 200, body: '[1]' },
    ]);
    const error = await client.getCall('c1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetriableError);
    expect(error).toMatchObject({ code: 'API_MALFORMED_BODY' });
    expect((error as Error).message).toContain('HTTP 200: [1]');
  });

  it('returns null for a call that is gone (404) and the mapped call object otherwise', async () => {
    const { client, http } = setup([
      { status: 404, body: '' },
      { status: 200, body: '{"data":{"uid":"a b","isPrivate":true}}' },
    ]);
    await expect(client.getCall('x')).resolves.toBeNull();
    await expect(client.getCall('a b')).resolves.toEqual({
      version: { kind: 'absent' },
      enrichment: {
        ok: true,
        enrichment: { startedAt: null, endedAt: null, isPrivate: true, conversationUid: null },
      },
    });
    expect(http.sent[1]?.path).toBe('/v4/calls/a%20b');
  });

  it('does not retry a programmer error from the transport', async () => {
    const { client, http } = setup([new TypeError('bug')]);
    await expect(client.listPage(first)).rejects.toBeInstanceOf(TypeError);
    expect(http.sent).toHaveLength(1);
  });

  it('stops waiting when the caller aborts', async () => {
    const http = scripted([{ status: 503, body: '' }]);
    const controller = new AbortController();
    const settings = {
      ...apiSchema.parse({ baseUrl: 'https://api.test' }),
      retry: { ...DEFAULT_RETRY_POLICY, initialDelayMs: 60_000, maxDelayMs: 60_000 },
    };
    const sleepUntilAborted: Clock['sleep'] = (_ms, signal) =>
      new Promise((_, reject) => {
        signal?.addEventListener('abort', () => reject(signal.reason as Error));
        controller.abort(new Error('stop'));
      });
    const client = new CallsApiClient({
      http,
      tokens: tokens(),
      settings,
      metrics: testMetrics(),
      clock: { now: () => 0, random: () => 0.99, sleep: sleepUntilAborted },
    });
    await expect(client.listPage(first, controller.signal)).rejects.toThrow('stop');
  });

  it('keeps the access token out of errors even when the API echoes it in its error body', async () => {
    const token = 'tok-9f8e7d6c5b4a3210';
    const echo = (status: number) => ({
      status,
      body: JSON.stringify({ error: { code: 'bad', message: `Authorization "Bearer ${token}" refused` } }),
      retryAfter: '999999',
    });
    const client = new CallsApiClient({
      http: scripted([echo(400), echo(502)]),
      tokens: { accessToken: async () => token, refreshAfterRejection: async () => token },
      settings: { ...apiSchema.parse({ baseUrl: 'https://api.test' }), retry: DEFAULT_RETRY_POLICY },
      metrics: testMetrics(),
    });
    const badRequest = await client.listPage(first).catch((e: unknown) => e);
    expect(badRequest).toMatchObject({ code: 'API_BAD_REQUEST' });
    expect((badRequest as Error).message).not.toContain(token);
    expect((badRequest as Error).message).toContain('[redacted]');
    const tooLong = await client.listPage(first).catch((e: unknown) => e);
    expect(tooLong).toMatchObject({ code: 'API_RETRY_AFTER_TOO_LONG' });
    expect((tooLong as Error).message).not.toContain(token);
  });
});
