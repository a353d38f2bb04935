import { afterEach, describe, expect, it } from 'vitest';
import { Authorization } from '../../../src/auth/authorization.js';
import { login } from '../../../src/auth/login.js';
import { parseConfig } from '../../../src/config/load.js';
import { startOAuthFixture, type OAuthFixture } from '../../support/auth/oauth-fixture.js';
import { clockReading } from '../../support/clock.js';

describe('authorization refusals', () => {
  let fx: OAuthFixture;
  afterEach(async () => {
    await fx.close();
  });

  /** `auth url`, then the browser: the code and state of the redirect, not yet redeemed. */
  async function approvedRedirect(oauth: Awaited<ReturnType<OAuthFixture['open']>>) {
    const started = await oauth.authorization().start();
    const waiting = fx.listener.waitForRedirect(started.state, 10_000);
    await fx.browse(started.url);
    return waiting;
  }

  it('refuses a redirect whose state is not the one the login issued, without redeeming anything', async () => {
    fx = await startOAuthFixture();
    const oauth = await fx.open();
    const forged = fx.sandbox.admin.stats();
    const attempt = login({
      authorization: oauth.authorization(),
      listener: fx.listener,
      show: () => {},
      open: (url) => {
        const redirect = new URL(url);
        redirect.searchParams.set('state', 'AttackerState123');
        void fx.browse(redirect.toString());
      },
      timeoutMs: 10_000,
    });
    await expect(attempt).rejects.toMatchObject({ code: 'AUTH_STATE_MISMATCH' });
    expect(fx.sandbox.admin.stats().tokenRequests).toBe(forged.tokenRequests);
    expect(await oauth.store.readGrant('default')).toBeUndefined();
  });

  it('refuses a replayed state, even with a fresh code, after one redemption', async () => {
    fx = await startOAuthFixture();
    const oauth = await fx.open();
    const { code, state } = await approvedRedirect(oauth);
    await oauth.authorization().complete(code, state);
    await expect(oauth.authorization().complete(code, state)).rejects.toMatchObject({
      code: 'AUTH_STATE_REUSED',
    });
    const second = await approvedRedirect(oauth);
    await expect(oauth.authorization().complete(second.code, state)).rejects.toMatchObject({
      code: 'AUTH_STATE_REUSED',
    });
    expect(fx.sandbox.admin.stats().tokenRequests).toBe(1);
  });

  it('refuses an unknown state and an expired one before any token request', async () => {
    fx = await startOAuthFixture();
    const clock = { now: Date.now() };
    const oauth = await fx.open({ clock: clockReading(() => clock.now) });
    const { code, state } = await approvedRedirect(oauth);
    await expect(oauth.authorization().complete(code, 'NeverIssued42')).rejects.toMatchObject({
      code: 'AUTH_STATE_UNKNOWN',
    });
    clock.now += fx.config.oauth!.stateTtlMs + 1;
    await expect(oauth.authorization().complete(code, state)).rejects.toMatchObject({
      code: 'AUTH_STATE_EXPIRED',
    });
    expect(fx.sandbox.admin.stats().tokenRequests).toBe(0);
  });

  it('refuses an http redirect_uri before any request is made', async () => {
    fx = await startOAuthFixture();
    const oauth = await fx.open();
    const base = {
      ...fx.config,
      oauth: { ...fx.config.oauth!, redirectUri: 'http://127.0.0.1:8976/callback' },
    };
    expect(() => parseConfig(base, fx.env)).toThrow(/redirectUri must be an https:\/\/ URL/);
    expect(
      () =>
        new Authorization({
          baseUrl: fx.sandbox.baseUrl,
          clientId: fx.sandbox.client.clientId,
          redirectUri: 'http://127.0.0.1:8976/callback',
          scopes: ['read_phones'],
          grant: 'default',
          store: oauth.store,
          endpoint: oauth.endpoint,
          stateTtlMs: 60_000,
        }),
    ).toThrow(/redirect_uri must use https/);
    expect(fx.sandbox.admin.stats().requests).toBe(0);
  });

  it('explains a wrong client secret clearly, without printing it', async () => {
    fx = await startOAuthFixture({ clientSecret: 'definitely-the-wrong-secret' });
    const oauth = await fx.open();
    const { code, state } = await approvedRedirect(oauth);
    const error = await oauth
      .authorization()
      .complete(code, state)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'AUTH_CLIENT_REJECTED', disposition: 'fatal' });
    const message = (error as Error).message;
    expect(message).toContain(`client_id "${fx.sandbox.client.clientId}"`);
    expect(message).toMatch(/invalid_client/);
    expect(message).toMatch(/oauth\.clientSecret|clientSecretFile/);
    expect(message).not.toContain('definitely-the-wrong-secret');
    expect(JSON.stringify(error)).not.toContain('definitely-the-wrong-secret');
  });
});
