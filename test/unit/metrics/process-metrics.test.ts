import { describe, expect, it } from 'vitest';
import { testMetrics } from '../../support/metrics.js';
import { metricValue } from '../../support/counters.js';

/** metrics/process-metrics.ts, through ConnectorMetrics (its options set them). */
describe('the process metrics', () => {
  it('exports the poll interval in seconds and build information', async () => {
    const metrics = testMetrics({ pollIntervalMs: 90_000, version: '1.2.3', connector: 'prod' });
    expect(await metricValue(metrics, 'calls_connector_poll_interval_seconds')).toBe(90);
    expect(
      await metricValue(metrics, 'calls_connector_build_info', { version: '1.2.3', connector: 'prod' }),
    ).toBe(1);
  });

  it('exports the shortest round of polls as owned locations over the request rate, following the assignment', async () => {
    const metrics = testMetrics({ pollIntervalMs: 60_000, requestsPerSecond: 20 });
    metrics.ownedLocations.set(10_000);
    expect(await metricValue(metrics, 'calls_connector_poll_round_seconds')).toBe(500);
    metrics.ownedLocations.set(4_000); // a rebalance took locations away
    expect(await metricValue(metrics, 'calls_connector_poll_round_seconds')).toBe(200);
  });
});
