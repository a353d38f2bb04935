/**
 * The LocationSync of the location-sync unit tests (test/unit/sync/location-sync*.test.ts): one location,
 * pages of three calls, enrichment on unless told, a real metrics registry, and calls at seconds of one minute.
 */
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';
import { silentLogger, type Logger } from '../../../src/logging/logger.js';
import { type ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { testMetrics } from '../metrics.js';
import { Enricher } from '../../../src/sync/location/enricher.js';
import { LocationSync, type LocationSyncSettings } from '../../../src/sync/location/location-sync.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../src/sync/model.js';
import type { FakeCall, FakeCallsApi } from './fake-calls-api.js';
import { InMemorySink } from './in-memory-sink.js';
import { testFingerprints } from './fingerprints.js';

export const LOC = '11111111-1111-1111-1111-111111111111';
export const t = (second: number) => `2024-03-01T12:00:${String(second).padStart(2, '0')}Z`;
export const call = (uid: string, second: number, extra: Partial<FakeCall> = {}): FakeCall => ({
  uid,
  locationUid: LOC,
  updatedAt: t(second),
  ...extra,
});

export function build(
  api: FakeCallsApi,
  options: {
    sink?: InMemorySink;
    start?: LocationOffset;
    settings?: Partial<LocationSyncSettings>;
    enrich?: boolean;
    logger?: Logger;
  } = {},
) {
  const sink = options.sink ?? new InMemorySink();
  const metrics = testMetrics();
  const sync = new LocationSync({
    locationUid: LOC,
    startOffset: options.start ?? EMPTY_OFFSET,
    api,
    enricher: new Enricher({ api, enabled: options.enrich ?? true, concurrency: 4 }),
    sink,
    metrics,
    logger: options.logger ?? silentLogger(),
    settings: {
      pageSize: 3,
      startSince: null,
      boundaryCap: 100,
      privacy: 'redact-unless-public',
      fingerprints: testFingerprints,
      commitRetry: { ...DEFAULT_RETRY_POLICY, maxAttempts: 4 },
      ...options.settings,
    },
    clock: { now: () => Date.now(), random: () => 0, sleep: async () => {} },
  });
  return { sync, sink, metrics };
}

export async function metricValue(
  metrics: ConnectorMetrics,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  return (metric?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val))
    .reduce((sum, v) => sum + v.value, 0);
}

export const group = (n: number, second: number) =>
  Array.from({ length: n }, (_, i) => call(`g${i}`, second));
