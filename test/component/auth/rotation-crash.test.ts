/**
 * What happens when the process dies between a refresh's token response and its use, with a service that
 * rotates refresh tokens (each refresh retires the one it used). See docs/oauth.md "Rotation and crashes".
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { OAuthRuntime } from '../../../src/auth/oauth-runtime.js';
import { FileBackend } from '../../../src/auth/store/file-backend.js';
import { loadStoreKey } from '../../../src/auth/store/store-key.js';
import { TokenStore } from '../../../src/auth/store/token-store.js';
import { TokenManager } from '../../../src/auth/token-manager.js';
import { testMetrics } from '../../support/metrics.js';
import { CrashingBackend } from '../../support/auth/crashing-backend.js';
import { KEY_ENV, startOAuthFixture, type OAuthFixture } from '../../support/auth/oauth-fixture.js';

const HOUR = 3600_000;

describe('refresh-token rotation across a crash', () => {
  let fx: OAuthFixture;
  afterEach(async () => {
    await fx.close();
  });

  /** Logs in, then returns a manager whose store can be made to "crash" around its next write. */
  async function loggedIn(
    rotate: boolean,
  ): Promise<{ oauth: OAuthRuntime; backend: CrashingBackend; doomed: TokenManager; first: string }> {
    fx = await startOAuthFixture({ sandbox: { rotateRefreshTokens: rotate } });
    const oauth = await fx.open();
    await fx.login(oauth);
    const key = await loadStoreKey({ keyEnv: KEY_ENV }, fx.env);
    const backend = new CrashingBackend(new FileBackend({ path: fx.storePath }));
    const doomed = new TokenManager({
      grant: 'default',
      store: new TokenStore(backend, key),
      endpoint: oauth.endpoint,
      refreshBeforeExpiryMs: 60_000,
      rotationGraceMs: 0,
    });
    const first = await doomed.accessToken();
    fx.sandbox.admin.advanceClock(10 * HOUR + 1000);
    expect(await fx.listCalls(first)).toBe(401);
    return { oauth, backend, doomed, first };
  }

  /** The refresh gets its token response, then the simulated crash hits the store write. */
  async function crashDuringRefresh(
    setup: { backend: CrashingBackend; doomed: TokenManager; first: string },
    when: CrashingBackend['armed'],
  ): Promise<void> {
    setup.backend.armed = when;
    await expect(setup.doomed.refreshAfterRejection(setup.first)).rejects.toMatchObject({
      code: 'AUTH_STORE_WRITE_FAILED',
      disposition: 'retriable',
    });
    expect(fx.sandbox.admin.stats().tokenRequests).toBe(2);
  }

  it('a crash after the new pair is stored loses nothing: the restarted process uses the stored pair without a new request', async () => {
    const setup = await loggedIn(true);
    const { first } = setup;
    await crashDuringRefresh(setup, 'after-write');

    const restarted = (await fx.open()).tokenProvider();
    const token = await restarted.accessToken();
    expect(token).not.toBe(first);
    expect(await fx.listCalls(token)).toBe(200);
    expect(fx.sandbox.admin.stats().tokenRequests).toBe(2);
  });

  it('a failed store write in a live process withholds the new token, then stores it on the next attempt without another request', async () => {
    const setup = await loggedIn(true);
    const { doomed, first } = setup;
    await crashDuringRefresh(setup, 'before-write');
    const token = await doomed.refreshAfterRejection(first);
    expect(await fx.listCalls(token)).toBe(200);
    expect(fx.sandbox.admin.stats().tokenRequests).toBe(2);
    expect(await (await fx.open()).tokenProvider().accessToken()).toBe(token);
  });

  it('a crash between the token response and its storage strands a rotating grant: the restart reports AUTH_GRANT_REVOKED (run auth login) without crashing, and auth login recovers', async () => {
    const setup = await loggedIn(true);
    const { first } = setup;
    await crashDuringRefresh(setup, 'before-write');

    // The process is gone with the only copy of the rotated refresh token. A new process starts:
    const metrics = testMetrics();
    const oauth = await fx.open({ metrics });
    const restarted = oauth.tokenProvider();
    const stale = await restarted.accessToken();
    expect(stale).toBe(first);
    expect(await fx.listCalls(stale)).toBe(401);
    const error = await restarted.refreshAfterRejection(stale).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'AUTH_GRANT_REVOKED', disposition: 'fatal' });
    expect((error as Error).message).toContain('calls-connector auth login');
    expect(
      (await metrics.registry.getSingleMetric('calls_connector_grant_valid')?.get())?.values[0]?.value,
    ).toBe(0);
    // Later calls fail fast, without hammering the token endpoint.
    await expect(restarted.accessToken()).rejects.toMatchObject({ code: 'AUTH_GRANT_REVOKED' });
    expect(fx.sandbox.admin.stats().tokenRequests).toBe(3);

    // A person runs `auth login`; the running manager picks the new grant up.
    await fx.login(oauth);
    expect(await fx.listCalls(await restarted.accessToken())).toBe(200);
    expect(
      (await metrics.registry.getSingleMetric('calls_connector_grant_valid')?.get())?.values[0]?.value,
    ).toBe(1);
  });

  it('without rotation the same crash is harmless: the stored refresh token still works after the restart', async () => {
    const setup = await loggedIn(false);
    await crashDuringRefresh(setup, 'before-write');
    const restarted = (await fx.open()).tokenProvider();
    const token = await restarted.refreshAfterRejection(await restarted.accessToken());
    expect(await fx.listCalls(token)).toBe(200);
  });
});
