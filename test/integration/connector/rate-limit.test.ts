/**
 * Issue 21 on the real stack: the API allows 8 requests/s per token, does not say so, and answers 429 with
 * Retry-After beyond it; the connector runs with the default api.requestsPerSecond (20). It must learn the
 * limit: everything published exactly once, no page failed for a 429, and the 429s few.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { parseConfig } from '../../../src/config/load.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { type ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { testMetrics } from '../../support/metrics.js';
import type { RunningSandbox, SandboxOptions } from '../../../packages/sandbox/src/index.js';
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

interface Run {
  sandbox: RunningSandbox;
  config: ConnectorConfig;
  connector: RunningConnector;
  metrics: ConnectorMetrics;
}

/**
 * A connector at the default rate (20/s: more than twice what the API allows) against a sandbox of these
 * data and faults, for the tests of one describe block.
 */
function connectorAgainst(options: SandboxOptions): Run {
  const run = { metrics: testMetrics() } as Run;
  beforeAll(async () => {
    run.sandbox = await startTestSandbox(options);
    run.config = parseConfig(connectorDocument(run.sandbox, { api: { requestsPerSecond: 20 } }), {});
    run.connector = await runConnector({ config: run.config, logger: silentLogger(), metrics: run.metrics });
  });
  afterAll(async () => {
    await run.connector.stop();
    await run.sandbox.close();
  });
  return run;
}

/** Waits for a traversal of every location, then: every call published once, enriched, no location error. */
async function expectEveryCallOnce(run: Run, timeoutMs: number, what: string): Promise<void> {
  await eventually(
    () => run.connector.runtime.status().every((s) => s.totals.traversalsCompleted >= 1),
    timeoutMs,
    what,
  );
  const truth = run.sandbox.locations.flatMap((location) => run.sandbox.admin.truth(location));
  const published = await publishedCalls(testKafka(), run.config, truth);
  expect(published.map(versionId).sort()).toEqual(truth.map(versionId).sort());
  expect(published.every((call) => call.enriched)).toBe(true);
  // Flow control, not failure: no traversal ended in an error.
  const errors = (await run.metrics.locationErrors.get()).values.reduce((n, v) => n + v.value, 0);
  expect(errors).toBe(0);
}

describe('the connector against an API with a rate limit it does not announce', () => {
  const run = connectorAgainst({
    data: { seed: 43, locations: 2, callsPerLocation: 100, privateRatio: 0.3 },
    faults: {
      latency: { medianMs: 10, p99Ms: 40 },
      rateLimit: { requestsPerSecond: LIMIT, burst: LIMIT, per: 'token' },
    },
  });

  it('converges on the limit: nothing lost, nothing doubled, no page failed for a 429, few 429s', async () => {
    await expectEveryCallOnce(run, 80_000, 'a complete traversal of every location under the hidden limit');
    const stats = run.sandbox.admin.stats();
    const requests = stats.listRequests + stats.getRequests;
    expect(stats.faults.rateLimited).toBeGreaterThan(0);
    expect(stats.faults.rateLimited / requests).toBeLessThanOrEqual(0.05);
    // The learned rate came down from 20 to about the limit.
    const learned = (await run.metrics.apiRateLimitRate.get()).values[0]?.value ?? 0;
    expect(learned).toBeLessThan(LIMIT * 1.5);
    expect(learned).toBeGreaterThan(LIMIT * 0.3);
  });
});

/**
 * Issue 32 on the real stack: an API announcing X-RateLimit-Remaining and X-RateLimit-Reset on every
 * answer, the reset in epoch milliseconds. The old reading took the reset for epoch seconds and held the
 * scope until the year 58,873 (3 of 940 calls published); now the connector honours it and finishes.
 */
describe('the connector against an API announcing its reset in epoch milliseconds', () => {
  const run = connectorAgainst({
    data: { seed: 44, locations: 1, callsPerLocation: 60, privateRatio: 0.3 },
    faults: {
      rateLimit: {
        requestsPerSecond: LIMIT,
        burst: LIMIT,
        per: 'token',
        headers: 'x-ratelimit',
        resetForm: 'epoch-ms',
      },
    },
  });

  it('publishes every call exactly once: each hold ends by itself, no stall', async () => {
    await expectEveryCallOnce(
      run,
      60_000,
      'a complete traversal under a limit announced in epoch milliseconds',
    );
    // The announced reset was honoured: the scope was held, and held before the API had to refuse (429s drained
    // by backoff alone, with the headers unread, would also publish every call).
    const held = (await run.metrics.apiThrottledSeconds.get()).values.reduce((n, v) => n + v.value, 0);
    const refused = (await run.metrics.apiRateLimited.get()).values.reduce((n, v) => n + v.value, 0);
    expect(held).toBeGreaterThan(0);
    expect(refused).toBe(0);
  });
});
