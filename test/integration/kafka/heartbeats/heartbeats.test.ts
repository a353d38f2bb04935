/** Heartbeat records on the real broker: one per location, keyed by connector and location, on a compacted topic. */
import { describe, expect, it } from 'vitest';
import { ensureHeartbeatTopic, HeartbeatPublisher } from '../../../../src/kafka/heartbeats/heartbeats.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import type { LocationStatus } from '../../../../src/sync/scheduler/scheduled-location.js';
import { readCommitted, testKafka, testKafkaConfig } from '../../../support/kafka.js';
import { uniqueName } from '../../../support/stack.js';
import { clockReading } from '../../../support/clock.js';
import { locationStatus } from '../../../support/sync/location-status.js';

const QUIET: LocationStatus = locationStatus({
  offset: { since: '2026-01-01T00:00:00Z', cursor: null, watermark: '2026-01-01T00:00:00Z', boundary: [] },
  lastSuccessAt: Date.parse('2026-01-02T00:00:00Z'),
});

describe('HeartbeatPublisher', () => {
  it('writes one heartbeat per location to the compacted heartbeat topic, saying when it last completed', async () => {
    const config = testKafkaConfig({ heartbeatTopic: uniqueName('heartbeats'), heartbeatIntervalMs: 60_000 });
    await ensureHeartbeatTopic(testKafka(), config);
    const metrics = testMetrics();
    const stalled: LocationStatus = {
      ...QUIET,
      locationUid: '00000000-0000-4000-8000-0000000000a2',
      state: 'backoff',
    };
    const publisher = new HeartbeatPublisher({
      kafka: testKafka(),
      topic: config.heartbeatTopic,
      intervalMs: config.heartbeatIntervalMs,
      connectorName: 'hb',
      locations: () => [QUIET, stalled],
      metrics,
      logger: silentLogger(),
      clock: clockReading(() => Date.parse('2026-01-02T00:05:00Z')),
    });
    await publisher.start();
    try {
      await publisher.beat();
    } finally {
      await publisher.stop();
    }

    const records = await readCommitted(testKafka(), config.heartbeatTopic);
    expect(records.map((r) => String(r.key))).toEqual([
      `hb/${QUIET.locationUid}`,
      `hb/${stalled.locationUid}`,
    ]);
    expect(JSON.parse(String(records[0]?.value))).toEqual({
      connector: 'hb',
      location: QUIET.locationUid,
      at: '2026-01-02T00:05:00.000Z',
      state: 'waiting',
      lastSuccessAt: '2026-01-02T00:00:00.000Z',
      since: '2026-01-01T00:00:00Z',
      watermark: '2026-01-01T00:00:00Z',
    });
    expect(JSON.parse(String(records[1]?.value))).toMatchObject({ state: 'backoff' });
    const counted = (await metrics.heartbeats.get()).values.reduce((sum, v) => sum + v.value, 0);
    expect(counted).toBe(2);
  });
});
