/**
 * Issue 21 on the real stack: the API allows 8 requests/s per token, does not say so, and answers 429 with
 * Retry-After beyond it; the connector runs with the default api.requestsPerSecond (20). It must learn the
 * limit: everything published exactly once, no page failed for a 429, and the 429s few.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { parseConfig } from '../../../src/config/load.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import {
  connectorDocument,
  publishedCalls,
  runConnector,
  startTestSandbox,
  versionId,
  type RunningConnector,
} from '../../support/connector.js';
import { eventually, testKafka } from '../../support/kafka.js';

const LIMIT = 8;

describe('the connector against an API with a rate limit it does not announce', () => {
  let sandbox: RunningSandbox;
  let config: ConnectorConfig;
  let connector: RunningConnector;
  const metrics = new ConnectorMetrics();

  beforeAll(async () => {
    sandbox = await startTestSandbox({
      data: { seed: 43, locations: 2, callsPerLocation: 100, privateRatio: 0.3 },
      faults: {
        latency: { medianMs: 10, p99Ms: 40 },
        rateLimit: { requestsPerSecond: LIMIT, burst: LIMIT, per: 'token' },
      },
    });
    // The default rate (20/s): more than twice what the API allows.
    config = parseConfig(connectorDocument(sandbox, { api: { requestsPerSecond: 20 } }), {});
    connector = await runConnector({ config, logger: silentLogger(), metrics });
  });

  afterAll(async () => {
    await connector.stop();
    await sandbox.close();
  });

  it('converges on the limit: nothing lost, nothing doubled, no page failed for a 429, few 429s', async () => {
    await eventually(
      () => connector.runtime.status().every((s) => s.totals.traversalsCompleted >= 1),
      80_000,
      'a complete traversal of every location under the hidden limit',
    );
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(testKafka(), config, truth);
    expect(published.map(versionId).sort()).toEqual(truth.map(versionId).sort());
    expect(published.every((call) => call.enriched)).toBe(true);

    const stats = sandbox.admin.stats();
    const requests = stats.listRequests + stats.getRequests;
    expect(stats.faults.rateLimited).toBeGreaterThan(0);
    expect(stats.faults.rateLimited / requests).toBeLessThanOrEqual(0.05);
    // Flow control, not failure: no traversal ended in an error.
    const errors = (await metrics.locationErrors.get()).values.reduce((n, v) => n + v.value, 0);
    expect(errors).toBe(0);
    // The learned rate came down from 20 to about the limit.
    const learned = (await metrics.apiRateLimitRate.get()).values[0]?.value ?? 0;
    expect(learned).toBeLessThan(LIMIT * 1.5);
    expect(learned).toBeGreaterThan(LIMIT * 0.3);
  });
});
