/**
 * The connector under a misbehaving API, end to end: OAuth grant from the real authorization flow (access tokens
 * expiring early, so refreshes happen mid-run), 429 with Retry-After, 5xx, connections dropped mid-response,
 * malformed JSON bodies and cursors that expire. A read_committed consumer must still see exactly the truth.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import {
  loginToSandbox,
  oauthConnectorConfig,
  publishedCalls,
  runConnector,
  startOAuthSandbox,
  versionId,
  type RunningConnector,
} from '../../support/connector.js';
import { eventually, testKafka } from '../../support/kafka.js';

describe('the connector against a faulty API, with OAuth', () => {
  let sandbox: RunningSandbox;
  let config: ConnectorConfig;
  let connector: RunningConnector;
  const metrics = testMetrics();

  beforeAll(async () => {
    const oauth = await startOAuthSandbox('faulty-client', {
      rotateRefreshTokens: true,
      data: {
        seed: 23,
        locations: 3,
        callsPerLocation: 200,
        privateRatio: 0.3,
        sameInstantGroups: { count: 1, size: 60 },
      },
      faults: {
        seed: 5,
        rateLimitRate: 0.04,
        retryAfterSeconds: 0,
        serverErrorRate: 0.04,
        dropConnectionRate: 0.03,
        malformedJsonRate: 0.03,
        accessTokenEarlyExpiryRate: 0.02,
        cursorTtlMs: 400,
        latency: { medianMs: 3, p99Ms: 40 },
      },
    });
    sandbox = oauth.sandbox;
    config = await oauthConnectorConfig(oauth, {
      api: {
        retry: { initialDelayMs: 10, maxDelayMs: 200 },
        // The injected 429s are drawn at random, not caused by our rate: left to learn from them, the rate
        // would sink towards the default floor (docs/rate-limits.md); the floor keeps this test's pace.
        rateLimit: { floorPerSecond: 200 },
      },
    });
    await loginToSandbox(oauth, config);
    connector = await runConnector({ config, logger: silentLogger(), metrics, env: oauth.env });
  });

  afterAll(async () => {
    await connector.stop();
    await sandbox.close();
  });

  it('publishes exactly the truth, each version once, and recovers from every kind of fault', async () => {
    await eventually(
      () => connector.runtime.status().every((s) => s.totals.traversalsCompleted >= 1),
      120_000,
      'a complete traversal of every location under faults',
    );
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(testKafka(), config, truth);
    expect(published.map(versionId).sort()).toEqual(truth.map(versionId).sort());

    // The faults really happened, and each was handled rather than avoided.
    const retries = await metrics.apiRetries.get();
    const reasons = new Set(retries.values.filter((v) => v.value > 0).map((v) => String(v.labels.reason)));
    expect([...reasons]).toEqual(
      expect.arrayContaining(['rate_limited', '5xx', 'malformed_body', 'network']),
    );
    const refreshes = await metrics.tokenRefreshes.get();
    expect(refreshes.values.find((v) => v.labels.result === 'success')?.value ?? 0).toBeGreaterThan(0);
    expect(connector.runtime.status().every((s) => s.state !== 'stopped')).toBe(true);
  });
});
