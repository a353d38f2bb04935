/**
 * The token manager under the scheduler, on a manual clock: the sequence that made the self-healing
 * integration test fail about once in four runs, made deterministic. Locations paused by a revoked grant are
 * retried `poll.stoppedRetry` later; when two retries fall due together after `auth login` (the one scheduler
 * timer hands both to workers in the same turn; on the real clock, two retries within one store read of
 * each other), both ask the token manager for a token at once, while the grant is still marked revoked.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';
import { StoreKey } from '../../../src/auth/store/encryption.js';
import { TokenStore, type GrantRecord } from '../../../src/auth/store/token-store.js';
import { TokenRequestRefused, type TokenEndpoint } from '../../../src/auth/token-endpoint.js';
import { TokenManager } from '../../../src/auth/token-manager.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import { Enricher } from '../../../src/sync/location/enricher.js';
import type { CallsApi } from '../../../src/sync/ports.js';
import { Scheduler } from '../../../src/sync/scheduler/scheduler.js';
import { MemoryBackend } from '../../support/auth/memory-backend.js';
import { ManualClock } from '../../support/clock.js';
import { eventually } from '../../support/async.js';
import { FakeCallsApi } from '../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../support/sync/in-memory-sink.js';
import { unitLocationSync } from '../../support/sync/unit-location-sync.js';

const HOUR = 3600_000;
const INTERVAL_MS = 60_000;
const STOPPED_RETRY_MS = 1_000;

const grant = (accessToken: string, refreshToken: string): GrantRecord => ({
  grant: 'default',
  clientId: 'c',
  accessToken,
  refreshToken,
  accessTokenExpiresAt: 10 * HOUR,
  obtainedAt: 0,
  scopes: ['read_phones'],
});

/** The token endpoint of a revoked grant: every refresh is refused. */
const refusingEndpoint: TokenEndpoint = {
  redeemCode: () => Promise.reject(new Error('not used')),
  refresh: () =>
    Promise.reject(new TokenRequestRefused('AUTH_INVALID_GRANT', 'refused', 400, 'invalid_grant')),
};

describe('locations paused by a revoked grant', () => {
  it('all resume when their retries fall due at the same instant after a new grant is stored', async () => {
    // random() = 0: no jitter, so locations stopped at one instant are retried at one instant.
    const clock = new ManualClock(1 * HOUR, 0);
    const store = new TokenStore(new MemoryBackend(), new StoreKey(randomBytes(32)));
    await store.writeGrant(grant('at-0', 'rt-0'));
    const metrics = testMetrics();
    const manager = new TokenManager({
      grant: 'default',
      store,
      endpoint: refusingEndpoint,
      refreshBeforeExpiryMs: 10 * 60_000,
      rotationGraceMs: 0,
      clock,
      metrics,
    });
    const locations = ['00000000-0000-0000-0000-000000000001', '00000000-0000-0000-0000-000000000002'];
    const fake = new FakeCallsApi(
      locations.map((locationUid, i) => ({ uid: `c${i}`, locationUid, updatedAt: '2024-03-01T12:00:00Z' })),
    );
    const rejected = new Set<string>();
    // As the API client does: a token before each request, and a 401 answered by refreshAfterRejection.
    const api: CallsApi = {
      listPage: async (request, signal) => {
        const token = await manager.accessToken(signal);
        if (rejected.has(token)) await manager.refreshAfterRejection(token, signal);
        return fake.listPage(request, signal);
      },
      getCall: (uid) => fake.getCall(uid),
    };
    const sink = new InMemorySink();
    const enricher = new Enricher({ api, enabled: false, concurrency: 1 });
    const scheduler = new Scheduler({
      locations: locations.map((locationUid) =>
        unitLocationSync({ locationUid, api, enricher, sink, metrics, clock }),
      ),
      settings: {
        maxLocationsInFlight: 2,
        intervalMs: INTERVAL_MS,
        pagesPerTurn: 1,
        shutdownTimeoutMs: 1_000,
        failureBackoff: DEFAULT_RETRY_POLICY,
        stoppedRetry: {
          initialDelayMs: STOPPED_RETRY_MS,
          maxDelayMs: 2 * STOPPED_RETRY_MS,
          multiplier: 2,
          jitter: 0.2,
        },
      },
      metrics,
      logger: silentLogger(),
      clock,
    });
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    const settled = (what: string, check: (stoppedBy: string | null) => boolean) =>
      eventually(
        () => scheduler.status().every((s) => s.state !== 'running' && check(s.stoppedBy)),
        5_000,
        what,
      );
    await eventually(
      () => scheduler.status().every((s) => s.totals.traversalsCompleted === 1),
      5_000,
      'the first traversals',
    );
    await clock.sleeping(1);

    // The grant is revoked; one interval later both locations have polled and are paused by it, at one instant.
    rejected.add('at-0');
    clock.advance(INTERVAL_MS);
    await settled('both locations paused', (stoppedBy) => stoppedBy === 'AUTH_GRANT_REVOKED');
    const retries = scheduler.status().map((s) => s.nextRunAt);
    expect(retries).toEqual([clock.now() + STOPPED_RETRY_MS, clock.now() + STOPPED_RETRY_MS]);

    // `auth login` stores a new grant; both retries come at the same instant.
    await store.writeGrant(grant('at-new', 'rt-new'));
    clock.advance(STOPPED_RETRY_MS);
    await settled('both retries done', (stoppedBy) => stoppedBy !== 'AUTH_GRANT_REVOKED');
    expect(scheduler.status().map((s) => ({ stoppedBy: s.stoppedBy, lastError: s.lastError?.code }))).toEqual(
      [
        { stoppedBy: null, lastError: 'AUTH_GRANT_REVOKED' },
        { stoppedBy: null, lastError: 'AUTH_GRANT_REVOKED' },
      ],
    );
    expect(scheduler.status().every((s) => s.lastSuccessAt === clock.now())).toBe(true);

    stop.abort();
    await running;
  });
});
