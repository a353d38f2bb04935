/**
 * openSignals: the signals channel opens in the background and never fails or holds up the start. A Kafka that
 * refuses it (a missing ACL) is reported and tried again after a backoff on the clock, until close.
 */
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../src/config/load.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../../src/metrics/metrics.js';
import { openSignals } from '../../../../src/runtime/signals/signal-service.js';
import { ManualClock } from '../../../support/clock.js';
import { MINIMAL_CONFIG } from '../../../support/minimal-config.js';

/** A kafkajs client whose every admin connection is refused as a principal without the ACLs is. */
function refusingKafka(): { kafka: Kafka; connects: () => number } {
  let connects = 0;
  const refused = Object.assign(new Error('Not authorized to access topics: [Topic authorization failed]'), {
    name: 'KafkaJSProtocolError',
    type: 'TOPIC_AUTHORIZATION_FAILED',
    retriable: false,
  });
  const admin = {
    connect: () => {
      connects += 1;
      return Promise.reject(refused);
    },
    disconnect: () => Promise.resolve(),
  };
  return { kafka: { admin: () => admin } as unknown as Kafka, connects: () => connects };
}

async function settled(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('openSignals', () => {
  it('returns at once when Kafka refuses the signals topic, says why, and tries again after a backoff until closed', async () => {
    const config = parseConfig(MINIMAL_CONFIG);
    const clock = new ManualClock(0);
    const { kafka, connects } = refusingKafka();
    const signals = openSignals(kafka, {
      config,
      instance: 'i1',
      ownsPartition: () => true,
      configured: () => true,
      target: null,
      metrics: new ConnectorMetrics(),
      logger: silentLogger(),
      clock,
      retryBackoff: { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0 },
    });
    await settled();
    expect(connects()).toBe(1);
    expect(signals.health()).toMatchObject({ ok: false });
    expect(signals.health().detail).toMatch(
      /^SIGNALS_NOT_READ: the signals topic could not be read: .*again in 1 s$/,
    );
    expect(signals.status()).toEqual({
      pausedLocations: [],
      running: [],
      problem: expect.stringMatching(/^SIGNALS_NOT_READ: /) as string,
    });
    expect(signals.paused.isPaused('any')).toBe(false);

    clock.advance(1_000);
    await settled();
    expect(connects()).toBe(2);

    await signals.close();
    clock.advance(60_000);
    await settled();
    expect(connects()).toBe(2);
  });
});
