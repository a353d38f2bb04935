import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { StoreKey } from '../../../src/auth/store/encryption.js';
import { TokenStore, type GrantRecord } from '../../../src/auth/store/token-store.js';
import {
  TokenRequestRefused,
  type TokenEndpoint,
  type TokenResponse,
} from '../../../src/auth/token-endpoint.js';
import { TokenManager } from '../../../src/auth/token-manager.js';
import { codeOf, RetriableError } from '../../../src/errors/index.js';
import { testMetrics } from '../../support/metrics.js';
import { MemoryBackend } from '../../support/auth/memory-backend.js';
import { deferred, settles } from '../../support/async.js';
import { clockReading } from '../../support/clock.js';
import { metricValue } from '../../support/counters.js';

const HOUR = 3600_000;

/** A token endpoint that rotates: each refresh retires the refresh token it was given. */
class FakeEndpoint implements TokenEndpoint {
  refreshes = 0;
  live = new Set<string>(['rt-0']);
  failWith: Error | undefined;
  gate: Promise<void> | undefined;

  async redeemCode(): Promise<TokenResponse> {
    throw new Error('not used');
  }

  async refresh(refreshToken: string): Promise<TokenResponse> {
    this.refreshes++;
    if (this.gate !== undefined) await this.gate;
    if (this.failWith !== undefined) throw this.failWith;
    if (!this.live.delete(refreshToken))
      throw new TokenRequestRefused('AUTH_INVALID_GRANT', 'refused', 400, 'invalid_grant');
    const n = this.refreshes;
    this.live.add(`rt-${n}`);
    return { accessToken: `at-${n}`, refreshToken: `rt-${n}`, expiresInSeconds: undefined, scope: undefined };
  }
}

const initial: GrantRecord = {
  grant: 'default',
  clientId: 'c',
  accessToken: 'at-0',
  refreshToken: 'rt-0',
  accessTokenExpiresAt: 10 * HOUR,
  obtainedAt: 0,
  scopes: ['read_phones'],
};

async function setup(options: { now?: number; seed?: boolean } = {}) {
  const backend = new MemoryBackend();
  const store = new TokenStore(backend, new StoreKey(randomBytes(32)));
  if (options.seed ?? true) await store.writeGrant(initial);
  const endpoint = new FakeEndpoint();
  const clock = { now: options.now ?? 1 * HOUR };
  const metrics = testMetrics();
  const manager = new TokenManager({
    grant: 'default',
    store,
    endpoint,
    refreshBeforeExpiryMs: 10 * 60_000,
    rotationGraceMs: 0,
    clock: clockReading(() => clock.now),
    metrics,
  });
  return { backend, store, endpoint, clock, metrics, manager };
}

describe('TokenManager', () => {
  it('hands out the stored access token without a request while it is fresh', async () => {
    const { manager, endpoint } = await setup();
    expect(await manager.accessToken()).toBe('at-0');
    expect(endpoint.refreshes).toBe(0);
  });

  it('refreshes proactively within refreshBeforeExpiryMs of the expiry and stores the new pair', async () => {
    const { manager, endpoint, clock, store, metrics } = await setup();
    clock.now = 10 * HOUR - 5 * 60_000;
    expect(await manager.accessToken()).toBe('at-1');
    expect(endpoint.refreshes).toBe(1);
    expect(await store.readGrant('default')).toMatchObject({
      accessToken: 'at-1',
      refreshToken: 'rt-1',
      accessTokenExpiresAt: clock.now + 10 * HOUR,
    });
    expect(await metricValue(metrics, 'calls_connector_token_refreshes_total', { result: 'success' })).toBe(
      1,
    );
    expect(
      await metricValue(metrics, 'calls_connector_token_expiry_timestamp_seconds', { grant: 'default' }),
    ).toBe((clock.now + 10 * HOUR) / 1000);
  });

  it('refreshes a token the service issued for less than the refresh margin halfway through its life, not on every call', async () => {
    const { manager, endpoint, clock } = await setup();
    const refresh = endpoint.refresh.bind(endpoint);
    // Five-minute tokens, while refreshBeforeExpiryMs is ten minutes.
    endpoint.refresh = async (refreshToken) => ({ ...(await refresh(refreshToken)), expiresInSeconds: 300 });
    clock.now = 10 * HOUR - 5 * 60_000;
    expect(await manager.accessToken()).toBe('at-1');
    const issuedAt = clock.now;
    for (let i = 0; i < 5; i++) expect(await manager.accessToken()).toBe('at-1');
    clock.now = issuedAt + 149_000;
    expect(await manager.accessToken()).toBe('at-1');
    expect(endpoint.refreshes).toBe(1);
    clock.now = issuedAt + 150_000;
    expect(await manager.accessToken()).toBe('at-2');
  });

  it('answers 50 concurrent rejections of one token with a single refresh request', async () => {
    const { manager, endpoint } = await setup();
    const gate = deferred();
    endpoint.gate = gate.promise;
    const waiters = Array.from({ length: 50 }, () => manager.refreshAfterRejection('at-0'));
    gate.resolve();
    expect(new Set(await Promise.all(waiters))).toEqual(new Set(['at-1']));
    expect(endpoint.refreshes).toBe(1);
  });

  it('returns the newer token without a request when the rejected one was already replaced', async () => {
    const { manager, endpoint } = await setup();
    await manager.refreshAfterRejection('at-0');
    expect(await manager.refreshAfterRejection('at-0')).toBe('at-1');
    expect(endpoint.refreshes).toBe(1);
  });

  it('stores the rotated refresh token durably before anyone receives the new access token', async () => {
    const { manager, backend, store, endpoint } = await setup();
    const gate = deferred();
    backend.gate = gate.promise;
    let received: string | undefined;
    const refreshing = manager.refreshAfterRejection('at-0').then((token) => (received = token));
    await settles(() => backend.waiting === 1);
    // The token response has arrived and the write is held: the caller has nothing yet.
    expect(endpoint.refreshes).toBe(1);
    expect(received).toBeUndefined();
    backend.gate = undefined;
    gate.resolve();
    await refreshing;
    expect(received).toBe('at-1');
    expect((await store.readGrant('default'))?.refreshToken).toBe('rt-1');
  });

  it('withholds the new token when storing it fails, then stores it before any further request', async () => {
    const { manager, backend, endpoint, store } = await setup();
    backend.failNextWrite = new Error('disk full');
    await expect(manager.refreshAfterRejection('at-0')).rejects.toMatchObject({
      code: 'AUTH_STORE_WRITE_FAILED',
      disposition: 'retriable',
    });
    expect((await store.readGrant('default'))?.refreshToken).toBe('rt-0');
    expect(await manager.refreshAfterRejection('at-0')).toBe('at-1');
    expect(endpoint.refreshes).toBe(1);
    expect((await store.readGrant('default'))?.refreshToken).toBe('rt-1');
  });

  it('reports a refused refresh as AUTH_GRANT_REVOKED telling the person to run auth login, and sets grant_valid to 0', async () => {
    const { manager, endpoint, metrics } = await setup();
    endpoint.live.clear();
    const error = await manager.refreshAfterRejection('at-0').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'AUTH_GRANT_REVOKED', disposition: 'fatal' });
    expect((error as Error).message).toContain('calls-connector auth login');
    expect(await metricValue(metrics, 'calls_connector_grant_valid', { grant: 'default' })).toBe(0);
    expect(await metricValue(metrics, 'calls_connector_token_refreshes_total', { result: 'revoked' })).toBe(
      1,
    );
  });

  it('fails fast after revocation without new requests, and resumes once a new grant is stored', async () => {
    const { manager, endpoint, store, metrics } = await setup();
    endpoint.live.clear();
    await expect(manager.refreshAfterRejection('at-0')).rejects.toMatchObject({ code: 'AUTH_GRANT_REVOKED' });
    await expect(manager.accessToken()).rejects.toMatchObject({ code: 'AUTH_GRANT_REVOKED' });
    expect(endpoint.refreshes).toBe(1);
    await store.writeGrant({ ...initial, accessToken: 'at-new', refreshToken: 'rt-new' });
    expect(await manager.accessToken()).toBe('at-new');
    expect(await metricValue(metrics, 'calls_connector_grant_valid', { grant: 'default' })).toBe(1);
  });

  it('resumes every caller asking at once when a new grant was stored after a revocation', async () => {
    // The locations a revoked grant paused are retried together after `auth login`; each caller reading the
    // store on its own found the revocation already ended by the first one (a TypeError: stopped for good).
    const { manager, endpoint, store } = await setup();
    endpoint.live.clear();
    await expect(manager.refreshAfterRejection('at-0')).rejects.toMatchObject({ code: 'AUTH_GRANT_REVOKED' });
    const stillRevoked = await Promise.allSettled([manager.accessToken(), manager.accessToken()]);
    expect(stillRevoked.map((r) => r.status === 'rejected' && codeOf(r.reason))).toEqual([
      'AUTH_GRANT_REVOKED',
      'AUTH_GRANT_REVOKED',
    ]);
    await store.writeGrant({ ...initial, accessToken: 'at-new', refreshToken: 'rt-new' });
    expect(
      await Promise.all([
        manager.accessToken(),
        manager.accessToken(),
        manager.refreshAfterRejection('at-0'),
      ]),
    ).toEqual(['at-new', 'at-new', 'at-new']);
  });

  it('adopts a pair rotated by another instance instead of declaring the grant revoked', async () => {
    const first = await setup();
    const second = new TokenManager({
      grant: 'default',
      store: first.store,
      endpoint: first.endpoint,
      refreshBeforeExpiryMs: 10 * 60_000,
      rotationGraceMs: 0,
      clock: clockReading(() => first.clock.now),
    });
    expect(await second.accessToken()).toBe('at-0');
    // Instance one refreshes (rt-0 is retired); instance two still holds at-0/rt-0 in memory.
    expect(await first.manager.refreshAfterRejection('at-0')).toBe('at-1');
    expect(await second.refreshAfterRejection('at-0')).toBe('at-1');
    expect(first.endpoint.refreshes).toBe(1);
  });

  it('adopts a pair another instance rotated even when it is within its own refresh margin, instead of refreshing it again and losing that race to a third instance', async () => {
    const { manager, store, endpoint, clock, metrics } = await setup();
    expect(await manager.accessToken()).toBe('at-0');
    // Short-lived tokens: the service answers with pairs that are due for refresh by this manager's margin
    // (10 min) as soon as they are stored. Each of this manager's refreshes arrives just after another
    // instance used the same refresh token and stored the rotated pair.
    const rotatedBy = (n: number): GrantRecord => ({
      ...initial,
      accessToken: `at-other-${n}`,
      refreshToken: `rt-other-${n}`,
      obtainedAt: clock.now,
      accessTokenExpiresAt: clock.now + 5 * 60_000,
    });
    const refresh = endpoint.refresh.bind(endpoint);
    endpoint.refresh = async (refreshToken) => {
      endpoint.live.delete(refreshToken);
      await store.writeGrant(rotatedBy(endpoint.refreshes + 1));
      return refresh(refreshToken);
    };
    expect(await manager.refreshAfterRejection('at-0')).toBe('at-other-1');
    expect(endpoint.refreshes).toBe(1);
    expect(await metricValue(metrics, 'calls_connector_grant_valid', { grant: 'default' })).toBe(1);
  });

  it('keeps using a still-valid token when a proactive refresh fails for a retriable reason', async () => {
    const { manager, endpoint, clock } = await setup();
    endpoint.failWith = new RetriableError('AUTH_TOKEN_ENDPOINT_UNAVAILABLE', 'down');
    clock.now = 10 * HOUR - 60_000;
    expect(await manager.accessToken()).toBe('at-0');
    clock.now = 10 * HOUR + 1;
    await expect(manager.accessToken()).rejects.toMatchObject({ code: 'AUTH_TOKEN_ENDPOINT_UNAVAILABLE' });
  });

  it('retries a failed proactive refresh after a backoff, not on every call, for any failure but a revoked grant', async () => {
    const { manager, endpoint, clock } = await setup();
    endpoint.failWith = new TokenRequestRefused(
      'AUTH_TOKEN_REQUEST_REFUSED',
      'invalid_scope',
      400,
      'invalid_scope',
    );
    clock.now = 10 * HOUR - 5 * 60_000;
    for (let i = 0; i < 5; i++) expect(await manager.accessToken()).toBe('at-0');
    expect(endpoint.refreshes).toBe(1);
    clock.now += 5_001; // past the first backoff (at most 5 s)
    endpoint.failWith = undefined;
    expect(await manager.accessToken()).toBe('at-2'); // the fake endpoint numbers every request
    expect(endpoint.refreshes).toBe(2);
  });

  it('keeps using a live token after invalid_grant, re-reading the store with backoff until another instance stored a rotated pair', async () => {
    const { manager, endpoint, clock, store, metrics } = await setup();
    endpoint.live.clear(); // refuses rt-0
    clock.now = 10 * HOUR - 5 * 60_000;
    expect(await manager.accessToken()).toBe('at-0');
    clock.now += 5_001;
    expect(await manager.accessToken()).toBe('at-0');
    expect(endpoint.refreshes).toBe(1); // the refused refresh token is not sent again
    expect(await metricValue(metrics, 'calls_connector_grant_valid', { grant: 'default' })).toBe(1);

    await store.writeGrant({
      ...initial,
      accessToken: 'at-other',
      refreshToken: 'rt-other',
      accessTokenExpiresAt: 20 * HOUR,
    });
    clock.now += 60_000;
    expect(await manager.accessToken()).toBe('at-other');
  });

  it('declares the grant revoked once the access token expired with its refresh token still refused', async () => {
    const { manager, endpoint, clock } = await setup();
    endpoint.live.clear();
    clock.now = 10 * HOUR - 5 * 60_000;
    expect(await manager.accessToken()).toBe('at-0');
    clock.now = 10 * HOUR + 1;
    await expect(manager.accessToken()).rejects.toMatchObject({ code: 'AUTH_GRANT_REVOKED' });
    expect(endpoint.refreshes).toBe(1);
  });

  it('does not refresh again on every retry when the API keeps rejecting a freshly refreshed token', async () => {
    const { manager, endpoint, clock } = await setup();
    expect(await manager.refreshAfterRejection('at-0')).toBe('at-1');
    // The API rejects at-1 too: one more refresh is allowed, then a backoff.
    expect(await manager.refreshAfterRejection('at-1')).toBe('at-2');
    await expect(manager.refreshAfterRejection('at-2')).rejects.toMatchObject({
      code: 'AUTH_TOKEN_REJECTED_AFTER_REFRESH',
      disposition: 'retriable',
    });
    await expect(manager.refreshAfterRejection('at-2')).rejects.toMatchObject({
      code: 'AUTH_TOKEN_REJECTED_AFTER_REFRESH',
    });
    expect(endpoint.refreshes).toBe(2);
    clock.now += 10_001; // past the second backoff (at most 10 s)
    expect(await manager.refreshAfterRejection('at-2')).toBe('at-3');
  });

  it('refreshes at once a refreshed token that served requests before the API rejected it', async () => {
    const { manager, endpoint } = await setup();
    expect(await manager.refreshAfterRejection('at-0')).toBe('at-1');
    expect(await manager.refreshAfterRejection('at-1')).toBe('at-2');
    for (let i = 0; i < 20; i++) expect(await manager.accessToken()).toBe('at-2');
    expect(await manager.refreshAfterRejection('at-2')).toBe('at-3');
    expect(endpoint.refreshes).toBe(3);
  });

  it('spreads the refresh of instances over refreshJitterMs before refreshBeforeExpiryMs', async () => {
    const { store, endpoint, clock } = await setup();
    const manager = (random: number) =>
      new TokenManager({
        grant: 'default',
        store,
        endpoint,
        refreshBeforeExpiryMs: 10 * 60_000,
        refreshJitterMs: 5 * 60_000,
        clock: { ...clockReading(() => clock.now), random: () => random },
      });
    clock.now = 10 * HOUR - 14 * 60_000;
    expect(await manager(0).accessToken()).toBe('at-0');
    expect(endpoint.refreshes).toBe(0);
    expect(await manager(0.99).accessToken()).toBe('at-1');
    expect(endpoint.refreshes).toBe(1);
  });

  it('says to run auth login when no grant is stored', async () => {
    const { manager } = await setup({ seed: false });
    await expect(manager.accessToken()).rejects.toThrow(/no OAuth grant "default".*auth login/);
  });

  it('lets one waiter abort without cancelling the refresh the others share', async () => {
    const { manager, endpoint } = await setup();
    const gate = deferred();
    endpoint.gate = gate.promise;
    const controller = new AbortController();
    const aborted = manager.refreshAfterRejection('at-0', controller.signal);
    const other = manager.refreshAfterRejection('at-0');
    controller.abort(new Error('shutting down'));
    await expect(aborted).rejects.toThrow('shutting down');
    gate.resolve();
    expect(await other).toBe('at-1');
  });

  it('validates its options at construction', async () => {
    const { store, endpoint } = await setup();
    expect(() => new TokenManager({ grant: 'g', store, endpoint, refreshBeforeExpiryMs: 11 * HOUR })).toThrow(
      RangeError,
    );
  });
});
