import { describe, expect, it } from 'vitest';
import { testMetrics } from '../../support/metrics.js';
import { ManualClock } from '../../support/clock.js';
import { metricValue } from '../../support/counters.js';

describe('ConnectorMetrics', () => {
  it("names its own metrics with the calls_connector_ prefix, Node's standard ones without, and every counter with _total", async () => {
    const metrics = testMetrics({ processMetrics: true });
    const all = await metrics.registry.getMetricsAsJSON();
    expect(all.length).toBeGreaterThan(20);
    for (const metric of all) {
      expect(metric.name).toMatch(/^(calls_connector|process|nodejs)_[a-z0-9_]+$/);
      expect(metric.name.endsWith('_total')).toBe(String(metric.type) === 'counter');
    }
    // Stock Node.js dashboards query these names exactly.
    const names = all.map((m) => m.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'process_cpu_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_eventloop_lag_seconds',
      ]),
    );
  });

  it('keeps each registry separate so two instances never share counters', async () => {
    const a = testMetrics();
    const b = testMetrics();
    a.recordsPublished.inc({ location: 'x' });
    expect(
      await metricValue(b, 'calls_connector_records_published_total', { location: 'x' }),
    ).toBeUndefined();
  });

  it('labels series by location uid, or "all" when per-location labels are off', () => {
    expect(testMetrics().location('uid-1')).toBe('uid-1');
    expect(testMetrics({ perLocationLabels: false }).location('uid-1')).toBe('all');
  });

  it('dates a traversal success on its clock when the caller gives no time', async () => {
    const metrics = testMetrics({ clock: new ManualClock(Date.parse('2026-01-01T00:10:00Z')) });
    metrics.observeTraversalSuccess('loc');
    expect(
      await metricValue(metrics, 'calls_connector_location_last_success_timestamp_seconds', {
        location: 'loc',
      }),
    ).toBe(Date.parse('2026-01-01T00:10:00Z') / 1000);
  });

  it("shows this instance's view of the other instances' configurations: instances per fingerprint, and one agreement state at 1", async () => {
    const metrics = testMetrics();
    const agreement = async (state: string) =>
      metricValue(metrics, 'calls_connector_configuration_agreement', { state });
    // No view yet: unknown, and no fingerprint seen.
    expect([await agreement('agreed'), await agreement('differs'), await agreement('unknown')]).toEqual([
      0, 0, 1,
    ]);
    metrics.configurationPeers.set({
      state: 'differs',
      peers: [
        { fingerprint: 'f1', instances: ['a', 'b'] },
        { fingerprint: 'f2', instances: ['c'] },
      ],
    });
    expect(await metricValue(metrics, 'calls_connector_configuration_peers', { fingerprint: 'f1' })).toBe(2);
    expect(await metricValue(metrics, 'calls_connector_configuration_peers', { fingerprint: 'f2' })).toBe(1);
    expect([await agreement('agreed'), await agreement('differs'), await agreement('unknown')]).toEqual([
      0, 1, 0,
    ]);
    metrics.configurationPeers.set({
      state: 'agreed',
      peers: [{ fingerprint: 'f2', instances: ['a', 'b', 'c'] }],
    });
    expect(
      await metricValue(metrics, 'calls_connector_configuration_peers', { fingerprint: 'f1' }),
    ).toBeUndefined();
    expect(await metricValue(metrics, 'calls_connector_configuration_peers', { fingerprint: 'f2' })).toBe(3);
    expect(await agreement('agreed')).toBe(1);
  });
});
