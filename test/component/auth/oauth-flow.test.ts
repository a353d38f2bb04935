import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHttpsDispatcher } from '../../../src/https/dispatcher.js';
import { login } from '../../../src/auth/login.js';
import { HttpTokenEndpoint } from '../../../src/auth/token-endpoint.js';
import { testMetrics } from '../../support/metrics.js';
import { startOAuthFixture, type OAuthFixture } from '../../support/auth/oauth-fixture.js';
import { clockReading } from '../../support/clock.js';

const HOUR = 3600_000;

describe('OAuth lifecycle against the sandbox over HTTPS', () => {
  let fx: OAuthFixture;
  beforeEach(async () => {
    fx = await startOAuthFixture();
  });
  afterEach(async () => {
    await fx.close();
  });

  it('authorizes, approves, redeems, uses and refreshes a grant end to end', async () => {
    const clock = { now: Date.now() };
    const metrics = testMetrics();
    const oauth = await fx.open({ clock: clockReading(() => clock.now), metrics });
    let shown = '';
    const summary = await login({
      authorization: oauth.authorization(),
      listener: fx.listener,
      show: (url) => (shown = url),
      open: (url) => void fx.browse(url),
      timeoutMs: 10_000,
    });
    expect(shown).toContain('scope=read_phones');
    expect(summary).toMatchObject({
      grant: 'default',
      clientId: fx.sandbox.client.clientId,
      scopes: ['read_phones'],
    });
    expect(summary.accessTokenExpiresAt).toBe(clock.now + 10 * HOUR);
    expect(fx.sandbox.admin.stats().tokenRequests).toBe(1);

    const tokens = oauth.tokenProvider();
    const first = await tokens.accessToken();
    expect(await fx.listCalls(first)).toBe(200);

    // Reactive: the sandbox's clock passes the 10 hours; the API answers 401 and the manager refreshes once.
    fx.sandbox.admin.advanceClock(10 * HOUR + 1000);
    expect(await fx.listCalls(first)).toBe(401);
    const second = await tokens.refreshAfterRejection(first);
    expect(second).not.toBe(first);
    expect(await fx.listCalls(second)).toBe(200);
    expect(fx.sandbox.admin.stats().tokenRequests).toBe(2);

    // Proactive: our clock nears the expiry of the new token; the next accessToken() refreshes before it fails.
    clock.now += 10 * HOUR - 5 * 60_000;
    const third = await tokens.accessToken();
    expect(third).not.toBe(second);
    expect(await fx.listCalls(third)).toBe(200);
    expect(fx.sandbox.admin.stats().tokenRequests).toBe(3);

    // The rotated refresh token is what the store holds: a restarted process carries on from it.
    const restarted = await fx.open();
    expect(await restarted.tokenProvider().accessToken()).toBe(third);
    const refreshes = (await metrics.registry.getSingleMetric('calls_connector_token_refreshes_total')?.get())
      ?.values;
    expect(refreshes).toEqual([
      expect.objectContaining({ labels: { grant: 'default', result: 'success' }, value: 2 }),
    ]);
  });

  it('uses PKCE end to end: the code the sandbox issued cannot be redeemed without the verifier the connector kept', async () => {
    const oauth = await fx.open();
    const { url } = await oauth.authorization().start();
    expect(new URL(url).searchParams.get('code_challenge_method')).toBe('S256');
    const { redirect } = await fx.browse(url);
    const code = redirect.searchParams.get('code') ?? '';
    const dispatcher = createHttpsDispatcher({ extraCaPem: fx.sandbox.caCertPem ?? undefined });
    try {
      const endpoint = new HttpTokenEndpoint({
        baseUrl: fx.sandbox.baseUrl,
        clientId: fx.sandbox.client.clientId,
        clientSecret: fx.sandbox.client.clientSecret,
        dispatcher,
        retry: { maxAttempts: 1, initialDelayMs: 1, maxDelayMs: 1 },
      });
      await expect(endpoint.redeemCode(code, fx.redirectUri)).rejects.toMatchObject({
        code: 'AUTH_INVALID_GRANT',
        message: expect.stringContaining('code_verifier is required') as unknown,
      });
    } finally {
      await dispatcher.close();
    }
  });

  it('answers a refresh racing 50 concurrent requests with exactly one token request', async () => {
    const oauth = await fx.open();
    await fx.login(oauth);
    const tokens = oauth.tokenProvider();
    const before = fx.sandbox.admin.stats().tokenRequests;
    fx.sandbox.admin.advanceClock(10 * HOUR + 1000);

    const statuses = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const token = await tokens.accessToken();
        const status = await fx.listCalls(token);
        if (status !== 401) return status;
        return fx.listCalls(await tokens.refreshAfterRejection(token));
      }),
    );
    expect(statuses).toEqual(Array.from({ length: 50 }, () => 200));
    expect(fx.sandbox.admin.stats().tokenRequests - before).toBe(1);
  });
});
