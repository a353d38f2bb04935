import { describe, expect, it, vi } from 'vitest';
import { testMetrics } from '../../support/metrics.js';
import { ManualClock } from '../../support/clock.js';
import { metricValue } from '../../support/counters.js';

/** metrics/location-progress.ts, through the members ConnectorMetrics gives it. */
describe('the location progress gauges', () => {
  it('computes freshness at scrape time on its clock, so a stuck location keeps getting staler', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:10:00Z'));
    const metrics = testMetrics({ clock });
    metrics.observeHighWater('loc', new Date('2026-01-01T00:00:00Z'));
    expect(
      await metricValue(metrics, 'calls_connector_location_freshness_seconds', { location: 'loc' }),
    ).toBe(600);
    clock.advance(50 * 60_000);
    expect(
      await metricValue(metrics, 'calls_connector_location_freshness_seconds', { location: 'loc' }),
    ).toBe(3600);
    expect(
      await metricValue(metrics, 'calls_connector_location_high_water_timestamp_seconds', {
        location: 'loc',
      }),
    ).toBe(Date.parse('2026-01-01T00:00:00Z') / 1000);
  });

  it("reports a backfill's position, T0, time left and ETA at scrape time, and T0 with nothing left once merged", async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T00:10:00Z'));
    const metrics = testMetrics({ clock });
    const value = (name: string) =>
      metricValue(metrics, `calls_connector_backfill_${name}`, { location: 'loc' });
    metrics.observeBackfill('loc', {
      untilMs: 10_000_000,
      positionMs: 4_000_000,
      startedAtMs: clock.now() - 100_000,
      startPositionMs: 1_000_000,
      records: 7,
    });
    expect(await metricValue(metrics, 'calls_connector_backfill_locations')).toBe(1);
    expect(await value('position_timestamp_seconds')).toBe(4_000);
    expect(await value('until_timestamp_seconds')).toBe(10_000);
    expect(await value('remaining_seconds')).toBe(6_000);
    expect(await value('eta_seconds')).toBe(200);
    metrics.observeBackfill('loc', null);
    expect(await metricValue(metrics, 'calls_connector_backfill_locations')).toBe(0);
    expect(await value('position_timestamp_seconds')).toBe(10_000);
    expect(await value('remaining_seconds')).toBe(0);
    expect(await value('eta_seconds')).toBe(0);
    metrics.forgetLocations(['loc']);
    expect(await value('until_timestamp_seconds')).toBeUndefined();
  });

  it('reports the stalest location under "all" when per-location labels are off', async () => {
    const clock = new ManualClock(Date.parse('2026-01-01T01:00:00Z'));
    const metrics = testMetrics({ perLocationLabels: false, clock });
    metrics.observeHighWater('fresh', new Date('2026-01-01T00:59:00Z'));
    metrics.observeHighWater('stale', new Date('2026-01-01T00:00:00Z'));
    metrics.observeHighWater('fresh', new Date('2026-01-01T00:59:30Z'));
    expect(
      await metricValue(metrics, 'calls_connector_location_freshness_seconds', { location: 'all' }),
    ).toBe(3600);

    metrics.observeTraversalSuccess('fresh', Date.parse('2026-01-01T00:59:00Z'));
    metrics.observeTraversalSuccess('stale', Date.parse('2026-01-01T00:30:00Z'));
    expect(
      await metricValue(metrics, 'calls_connector_location_last_success_timestamp_seconds', {
        location: 'all',
      }),
    ).toBe(Date.parse('2026-01-01T00:30:00Z') / 1000);
  });

  it('sets the per-location timestamps at scrape time, not on each poll (a poll must not pass over every location)', async () => {
    const metrics = testMetrics({ perLocationLabels: false });
    const successSet = vi.spyOn(metrics.lastTraversalSuccess, 'set');
    const highWaterSet = vi.spyOn(metrics.highWaterTimestamp, 'set');
    for (let i = 0; i < 1_000; i++) {
      metrics.observeTraversalSuccess(`loc-${i}`, 2_000_000 + i * 1000);
      metrics.observeHighWater(`loc-${i}`, 1_000_000 + i * 1000);
    }
    expect(successSet).not.toHaveBeenCalled();
    expect(highWaterSet).not.toHaveBeenCalled();
    // The scrape: the least recent location under "all".
    expect(await metricValue(metrics, 'calls_connector_location_last_success_timestamp_seconds')).toBe(2_000);
    expect(await metricValue(metrics, 'calls_connector_location_high_water_timestamp_seconds')).toBe(1_000);
  });
});
