/**
 * Issue 32 item 1 on the real stack: sixteen locations polled every 500 ms against an API that allows 8
 * requests/s per token without saying so, so the live polls alone (32 requests/s) exceed the limit. Before,
 * once the live polls filled the budget and the workers, history stopped (no lane merged in 45 s). Now every
 * location's interval is stretched evenly (the effective-interval gauge), history keeps its share, the lanes
 * merge, and every call version is published once. 15 to 30 s on the shared stack (the test itself 12 to 26 s).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import {
  connectorConfig,
  publishedCalls,
  runConnector,
  startTestSandbox,
  versionId,
  type RunningConnector,
} from '../../support/connector.js';
import { eventually, testKafka } from '../../support/kafka.js';

const LIMIT = 8;
const INTERVAL_MS = 500;

describe('live polls alone above a hidden rate limit', () => {
  let sandbox: RunningSandbox;
  let config: ConnectorConfig;
  let connector: RunningConnector;
  const metrics = testMetrics({ pollIntervalMs: INTERVAL_MS });
  /** The largest effective interval the gauge showed (seconds). */
  let widest = 0;

  beforeAll(async () => {
    sandbox = await startTestSandbox({
      data: { seed: 32, locations: 16, callsPerLocation: 20, privateRatio: 0.3 },
      faults: { rateLimit: { requestsPerSecond: LIMIT, burst: LIMIT, per: 'token' } },
    });
    // No single calls: each history page is one listing request, so the test measures turns and requests of
    // the listing, and stays short.
    config = connectorConfig(sandbox, {
      api: { requestsPerSecond: 20, enrich: false },
      poll: { intervalMs: INTERVAL_MS, maxLocationsInFlight: 2 },
    });
    connector = await runConnector({ config, logger: silentLogger(), metrics });
  });

  afterAll(async () => {
    await connector?.stop();
    await sandbox?.close();
  });

  it('stretches every interval, merges every history lane and publishes every call version once', async () => {
    const split = () => connector.runtime.status().filter((s) => s.offset.history !== undefined).length;
    const effective = async () => (await metrics.pollEffectiveInterval.get()).values[0]?.value ?? 0;
    await eventually(() => split() > 0, 15_000, 'locations split into lanes');
    // The live polls alone want more than the limit: the wait holds until the interval was stretched beyond the
    // configured one (the connector's own gauge; the sandbox's 429s below are the independent evidence of the limit).
    await eventually(
      async () => {
        widest = Math.max(widest, await effective());
        return (
          split() === 0 &&
          connector.runtime.status().every((s) => s.totals.traversalsCompleted >= 1) &&
          widest > INTERVAL_MS / 1000
        );
      },
      45_000,
      'every history lane merged, with the interval stretched meanwhile',
    );
    const stats = sandbox.admin.stats();
    expect(stats.faults.rateLimited).toBeGreaterThan(0);
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(testKafka(), config, truth);
    expect(published.map(versionId).sort()).toEqual(truth.map(versionId).sort());
    expect(new Set(published.map(versionId)).size).toBe(published.length);
  });
});
