/**
 * Injected faults (issue 3, deliverable 5): each one on its own, switched at run time, reproducible.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_FAULTS, startSandbox, type FaultSettings, type RunningSandbox } from '../../src/index.js';
import { SandboxTestClient } from './client.js';

describe('fault injection', () => {
  let sandbox: RunningSandbox;
  let client: SandboxTestClient;
  let token: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ data: { seed: 21, locations: 2, callsPerLocation: 80 } });
    client = new SandboxTestClient(sandbox);
    token = sandbox.issueTokens().accessToken;
  });
  afterEach(() => {
    sandbox.admin.setFaults(DEFAULT_FAULTS);
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('answers 429 rate_limited with Retry-After in seconds', async () => {
    sandbox.admin.setFaults({ rateLimitRate: 1, retryAfterSeconds: 7 });
    const reply = await client.list(token, { limit: 5 });
    expect(reply.status).toBe(429);
    expect(reply.headers['retry-after']).toBe('7');
    expect(reply.json).toMatchObject({ error: { code: 'rate_limited' } });
    expect(sandbox.admin.stats().faults.rateLimited).toBeGreaterThan(0);
  });

  it('enforces a request rate: a burst beyond the bucket is answered 429 with the Retry-After of the next token', async () => {
    sandbox.admin.setFaults({ rateLimit: { requestsPerSecond: 0.01, burst: 2 } });
    const before = sandbox.admin.stats().faults.rateLimited;
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await client.list(token, { limit: 1 })).status);
    const limited = await client.list(token, { limit: 1 });
    expect(statuses).toEqual([200, 200, 429]);
    expect(limited.status).toBe(429);
    // One token per 100 s.
    expect(limited.headers['retry-after']).toBe('100');
    expect(limited.json).toMatchObject({ error: { code: 'rate_limited' } });
    expect(sandbox.admin.stats().faults.rateLimited - before).toBe(2);
  });

  it('limits each access token on its own with `per: token`, and announces the limit when `headers` is on', async () => {
    sandbox.admin.setFaults({
      rateLimit: { requestsPerSecond: 0.01, burst: 1, per: 'token', headers: true },
    });
    const other = sandbox.issueTokens().accessToken;
    const first = await client.list(token, { limit: 1 });
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit-policy']).toBe('"default";q=0.01;w=1');
    expect(first.headers['ratelimit']).toBe('"default";r=0;t=100');
    expect((await client.list(token, { limit: 1 })).status).toBe(429);
    // Another token has a bucket of its own.
    expect((await client.list(other, { limit: 1 })).status).toBe(200);
  });

  it('announces X-RateLimit-* with the reset in epoch milliseconds, refuses with an HTTP-date Retry-After, and ends the quota window on the sandbox clock', async () => {
    sandbox.admin.setFaults({
      rateLimit: {
        requestsPerSecond: 100,
        burst: 100,
        quota: 1,
        quotaWindowSeconds: 60,
        headers: 'x-ratelimit',
        resetForm: 'epoch-ms',
      },
      retryAfterForm: 'http-date',
    });
    const before = sandbox.admin.now().getTime();
    const first = await client.list(token, { limit: 1 });
    expect(first.status).toBe(200);
    expect(first.headers).toMatchObject({ 'x-ratelimit-limit': '1', 'x-ratelimit-remaining': '0' });
    const reset = Number(first.headers['x-ratelimit-reset']);
    expect(reset).toBeGreaterThanOrEqual(before + 60_000);
    expect(reset).toBeLessThanOrEqual(sandbox.admin.now().getTime() + 60_000);

    const refused = await client.list(token, { limit: 1 });
    expect(refused.status).toBe(429);
    expect(refused.json).toMatchObject({ error: { code: 'quota_exhausted' } });
    const retryAfter = String(refused.headers['retry-after']);
    expect(retryAfter).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(Date.parse(retryAfter)).toBeGreaterThanOrEqual(reset);
    expect(Date.parse(retryAfter)).toBeLessThan(reset + 2_000);
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');

    sandbox.admin.advanceClock(60_000);
    expect((await client.list(token, { limit: 1 })).status).toBe(200);
  });

  it('writes the Retry-After of drawn 429s as an HTTP-date too', async () => {
    sandbox.admin.setFaults({ rateLimitRate: 1, retryAfterSeconds: 7, retryAfterForm: 'http-date' });
    const now = sandbox.admin.now().getTime();
    const reply = await client.list(token, { limit: 5 });
    expect(reply.status).toBe(429);
    const at = Date.parse(String(reply.headers['retry-after']));
    expect(at).toBeGreaterThanOrEqual(now + 7_000);
    expect(at).toBeLessThanOrEqual(sandbox.admin.now().getTime() + 8_000);
  });

  it('limits all the tokens of one client together with `per: client`', async () => {
    sandbox.admin.setFaults({ rateLimit: { requestsPerSecond: 0.01, burst: 1, per: 'client' } });
    const other = sandbox.issueTokens().accessToken;
    expect((await client.list(token, { limit: 1 })).status).toBe(200);
    const refused = await client.list(other, { limit: 1 });
    expect(refused.status).toBe(429);
    expect(refused.headers['ratelimit']).toBeUndefined();
  });

  it('answers 429 quota_exhausted with the Retry-After of the window once the quota is used up', async () => {
    sandbox.admin.setFaults({
      rateLimit: { requestsPerSecond: 100, burst: 100, quota: 2, quotaWindowSeconds: 3600 },
    });
    const before = sandbox.admin.stats().faults.quotaExhausted;
    expect((await client.list(token, { limit: 1 })).status).toBe(200);
    expect((await client.list(token, { limit: 1 })).status).toBe(200);
    const exhausted = await client.list(token, { limit: 1 });
    expect(exhausted.status).toBe(429);
    expect(exhausted.json).toMatchObject({ error: { code: 'quota_exhausted' } });
    expect(Number(exhausted.headers['retry-after'])).toBeGreaterThan(3590);
    expect(sandbox.admin.stats().faults.quotaExhausted - before).toBe(1);
  });

  it("answers 429 quota_exhausted to the listing and single calls of a spent grant's locations, and serves the others", async () => {
    const [held, free] = sandbox.locations;
    const heldCall = sandbox.admin.truth(held ?? '')[0];
    sandbox.admin.setFaults({
      grantQuotaSpent: { locations: [held ?? ''], retryAfterSeconds: 900 },
    });
    const before = sandbox.admin.stats().faults.quotaExhausted;
    const refused = await client.list(token, { locationUid: held ?? '', limit: 1 });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('900');
    expect(refused.json).toMatchObject({ error: { code: 'quota_exhausted' } });
    expect((await client.get(`/v4/calls/${heldCall?.uid ?? ''}`, token)).status).toBe(429);
    expect((await client.list(token, { locationUid: free ?? '', limit: 1 })).status).toBe(200);
    expect(sandbox.admin.stats().faults.quotaExhausted - before).toBe(2);
    sandbox.admin.setFaults({ grantQuotaSpent: null });
    expect((await client.list(token, { locationUid: held ?? '', limit: 1 })).status).toBe(200);
  });

  it('answers 500, 502 and 503 server_error at the configured rate', async () => {
    sandbox.admin.setFaults({ serverErrorRate: 1 });
    const statuses = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const reply = await client.get(`/v4/calls?limit=1`, token);
      expect(reply.json).toMatchObject({ error: { code: 'server_error' } });
      statuses.add(reply.status);
    }
    expect([...statuses].sort()).toEqual([500, 502, 503]);
  });

  it('answers injected 429 and 5xx with the configured body of any shape, Retry-After kept', async () => {
    const errorBody = {
      body: '<html><body><h1>502 Bad Gateway</h1></body></html>',
      contentType: 'text/html',
    };
    sandbox.admin.setFaults({ rateLimitRate: 1, retryAfterSeconds: 2, errorBody });
    const limited = await client.list(token, { limit: 5 });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('2');
    expect(limited.headers['content-type']).toBe('text/html');
    expect(limited.text).toBe(errorBody.body);
    sandbox.admin.setFaults({ rateLimitRate: 0, serverErrorRate: 1, errorBody });
    const failed = await client.get('/v4/calls?limit=1', token);
    expect([500, 502, 503]).toContain(failed.status);
    expect(failed.text).toBe(errorBody.body);
  });

  it('drops the connection in the middle of a response body', async () => {
    sandbox.admin.setFaults({ dropConnectionRate: 1 });
    await expect(client.list(token, { limit: 50 })).rejects.toBeInstanceOf(Error);
    expect(sandbox.admin.stats().faults.dropped).toBeGreaterThan(0);
  });

  it('sends malformed JSON bodies with status 200', async () => {
    sandbox.admin.setFaults({ malformedJsonRate: 1 });
    const reply = await client.list(token, { limit: 5 });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    expect(() => JSON.parse(reply.text) as unknown).toThrow(SyntaxError);
  });

  it('lets cursors expire after the configured lifetime: 410 cursor_expired', async () => {
    sandbox.admin.setFaults({ cursorTtlMs: 1_000 });
    const first = await client.list(token, { limit: 5 });
    const cursor = first.page.metadata.nextCursor as string;
    sandbox.admin.advanceClock(1_001);
    const reply = await client.list(token, { cursor });
    expect(reply.status).toBe(410);
    expect(reply.json).toMatchObject({ error: { code: 'cursor_expired' } });
  });

  it('answers a refused cursor with the configured status and body, of whatever shape', async () => {
    sandbox.admin.setFaults({
      cursorTtlMs: 1_000,
      cursorRejection: { status: 400, body: 'Pagination token is stale', contentType: 'text/plain' },
    });
    const first = await client.list(token, { limit: 5 });
    const cursor = first.page.metadata.nextCursor as string;
    sandbox.admin.advanceClock(1_001);
    const reply = await client.list(token, { cursor });
    expect(reply.status).toBe(400);
    expect(reply.headers['content-type']).toBe('text/plain');
    expect(reply.text).toBe('Pagination token is stale');
  });

  it('refuses valid cursors at the configured rate', async () => {
    sandbox.admin.setFaults({ cursorRejectionRate: 1 });
    const first = await client.list(token, { limit: 5 });
    const reply = await client.list(token, { cursor: first.page.metadata.nextCursor as string });
    expect(reply.status).toBe(410);
    expect(sandbox.admin.stats().faults.cursorsRejected).toBeGreaterThan(0);
  });

  it('fails the first single-call requests of chosen calls, then answers them', async () => {
    const [call] = sandbox.admin.truth(sandbox.locations[0]!);
    sandbox.admin.setFaults({
      singleCallFailures: [
        { rate: 1, attempts: 2, answer: { status: 200, body: 'not json at all', contentType: 'text/plain' } },
      ],
    });
    const path = `/v4/calls/${call!.uid}`;
    const replies = [];
    for (let i = 0; i < 3; i++) replies.push(await client.get(path, token));
    expect(replies.map((r) => [r.status, r.text.startsWith('not json')])).toEqual([
      [200, true],
      [200, true],
      [200, false],
    ]);
    expect(replies[2]?.json).toMatchObject({ data: { uid: call!.uid } });
  });

  it('reports another updatedAt than listed for chosen calls, through the admin API', async () => {
    const [call] = sandbox.admin.truth(sandbox.locations[1]!);
    const admin = await client.send('PUT', '/_sandbox/faults', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ singleCallVersionSkewRate: 1 }),
    });
    expect(admin.status).toBe(200);
    const reply = await client.get(`/v4/calls/${call!.uid}`, token);
    const single = (reply.json as { data: { updatedAt: string } }).data;
    expect(Date.parse(single.updatedAt) - Date.parse(call!.updatedAt)).toBe(1000);
  });

  it('expires access tokens early: 401 token_expired, and the token stays expired', async () => {
    const own = sandbox.issueTokens().accessToken;
    sandbox.admin.setFaults({ accessTokenEarlyExpiryRate: 1 });
    const reply = await client.list(own, { limit: 1 });
    expect(reply.status).toBe(401);
    expect(reply.json).toMatchObject({ error: { code: 'token_expired' } });
    sandbox.admin.setFaults({ accessTokenEarlyExpiryRate: 0 });
    expect((await client.list(own, { limit: 1 })).status).toBe(401);
  });

  it('revokes refresh tokens on refresh: 400 invalid_grant', async () => {
    const { refreshToken } = sandbox.issueTokens();
    sandbox.admin.setFaults({ refreshTokenRevocationRate: 1 });
    const reply = await client.postJson('/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: sandbox.client.clientId,
      client_secret: sandbox.client.clientSecret,
    });
    expect(reply.status).toBe(400);
    expect(reply.json).toMatchObject({ error: 'invalid_grant' });
    expect(sandbox.admin.stats().faults.refreshTokensRevoked).toBe(1);
  });

  it('adds latency drawn from a distribution to every faultable request', async () => {
    sandbox.admin.setFaults({ latency: { medianMs: 2, p99Ms: 10 } });
    const before = sandbox.admin.stats().faults.delayed;
    for (let i = 0; i < 5; i++) expect((await client.list(token, { limit: 1 })).status).toBe(200);
    expect(sandbox.admin.stats().faults.delayed).toBe(before + 5);
  });

  it('leaves the token endpoint alone unless includeTokenEndpoint is set', async () => {
    const body = { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'x', client_secret: 'x' };
    sandbox.admin.setFaults({ rateLimitRate: 1 });
    expect((await client.postJson('/oauth/token', body)).status).toBe(401);
    sandbox.admin.setFaults({ includeTokenEndpoint: true });
    expect((await client.postJson('/oauth/token', body)).status).toBe(429);
  });

  it('never injects faults into the admin endpoint', async () => {
    sandbox.admin.setFaults({ serverErrorRate: 1, rateLimitRate: 1 });
    expect((await client.get('/_sandbox/stats')).status).toBe(200);
  });

  it('rejects invalid settings and keeps the previous ones', () => {
    sandbox.admin.setFaults({ rateLimitRate: 0.25 });
    expect(() => sandbox.admin.setFaults({ serverErrorRate: 2 })).toThrow(RangeError);
    expect(() => sandbox.admin.setFaults({ errorBody: { body: 'x', contentType: '' } })).toThrow(
      /faults.errorBody must be null or/,
    );
    expect(sandbox.admin.faults().rateLimitRate).toBe(0.25);
  });
});

describe('fault determinism', () => {
  const faults: Partial<FaultSettings> = {
    seed: 99,
    rateLimitRate: 0.2,
    serverErrorRate: 0.2,
    malformedJsonRate: 0.2,
  };

  async function statusSequence(settings: Partial<FaultSettings>): Promise<string[]> {
    const sandbox = await startSandbox({
      data: { seed: 1, locations: 1, callsPerLocation: 20 },
      faults: settings,
    });
    const client = new SandboxTestClient(sandbox);
    try {
      const token = sandbox.issueTokens().accessToken;
      const seen: string[] = [];
      for (let i = 0; i < 40; i++) {
        const reply = await client.list(token, { limit: 2 });
        seen.push(reply.status === 200 && reply.json === undefined ? 'malformed' : String(reply.status));
      }
      return seen;
    } finally {
      await client.close();
      await sandbox.close();
    }
  }

  it('repeats the same faults for the same seed and request order, and others for another seed', async () => {
    const a = await statusSequence(faults);
    const b = await statusSequence(faults);
    const c = await statusSequence({ ...faults, seed: 100 });
    expect(a).toEqual(b);
    expect(new Set(a).size).toBeGreaterThan(2);
    expect(c).not.toEqual(a);
  });
});
