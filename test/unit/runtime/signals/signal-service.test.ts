/**
 * openSignals: the signals channel opens in the background and never fails or holds up the start. A Kafka that
 * refuses it (a missing ACL) is reported and tried again after a backoff on the clock, until close.
 */
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../src/config/load.js';
import { signalsTopicName } from '../../../../src/kafka/topics/topics.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../../src/metrics/metrics.js';
import { openSignals } from '../../../../src/runtime/signals/signal-service.js';
import { settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { FakeConsumer } from '../../../support/fake-consumer.js';
import { protocolError } from '../../../support/kafka-errors.js';
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

/**
 * A kafkajs client on which the offsets and signals topics exist (one partition, compacted, empty: the first read
 * needs no consumer) and whose reading consumers the test drives; `connect` answers each consumer's connect.
 */
function signalsKafka(offsetsTopic: string, connect: (consumerNumber: number) => Promise<void>) {
  const consumers: FakeConsumer[] = [];
  const topic = signalsTopicName(offsetsTopic);
  const admin = {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    listTopics: () => Promise.resolve([offsetsTopic, topic]),
    fetchTopicMetadata: ({ topics }: { topics: string[] }) =>
      Promise.resolve({ topics: topics.map((name) => ({ name, partitions: [{ partitionId: 0 }] })) }),
    describeConfigs: () =>
      Promise.resolve({
        resources: [{ configEntries: [{ configName: 'cleanup.policy', configValue: 'compact' }] }],
      }),
    fetchTopicOffsets: () => Promise.resolve([{ partition: 0, low: '0', high: '0', offset: '0' }]),
  };
  const producer = { connect: () => Promise.resolve(), disconnect: () => Promise.resolve() };
  const kafka = {
    admin: () => admin,
    producer: () => producer,
    consumer: () => {
      const consumer = new FakeConsumer(topic);
      consumers.push(consumer);
      const number = consumers.length;
      consumer.connect = () => connect(number);
      return consumer;
    },
  } as unknown as Kafka;
  return { kafka, consumers };
}

const CONFIG = parseConfig(MINIMAL_CONFIG);

/** The signals of an instance that owns every partition, opened on `kafka` (the first wait 1 s, no jitter). */
function open(kafka: Kafka, clock: ManualClock) {
  return openSignals(kafka, {
    config: CONFIG,
    instance: 'i1',
    ownsPartition: () => true,
    configured: () => true,
    target: { runs: () => true, carryOut: () => undefined },
    metrics: new ConnectorMetrics(),
    logger: silentLogger(),
    clock,
    retryBackoff: { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0 },
  });
}

async function settled(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('openSignals', () => {
  it('returns at once when Kafka refuses the signals topic, says why, and tries again after a backoff until closed', async () => {
    const clock = new ManualClock(0);
    const { kafka, connects } = refusingKafka();
    const signals = open(kafka, clock);
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

  it('shows a reading consumer that cannot start in status().problem once open, until a new one joins', async () => {
    const clock = new ManualClock(0);
    const refused = protocolError('GROUP_AUTHORIZATION_FAILED');
    const { kafka, consumers } = signalsKafka(CONFIG.kafka.offsetsTopic, (n) =>
      n === 1 ? Promise.reject(refused) : Promise.resolve(),
    );
    const signals = open(kafka, clock);
    await settles(() => signals.status().problem !== undefined, 'a problem shown');
    expect(signals.status().problem).toMatch(
      /^SIGNAL_READER_STOPPED: .*GROUP_AUTHORIZATION_FAILED.*; a new consumer in 1 s$/,
    );
    // The channel opened (the topic read to its end): the consumer reading on is the reader's to restart.
    await signals.ready();
    expect(signals.health().ok).toBe(false);
    expect(consumers[0]?.disconnected).toBe(true);

    clock.advance(1_000);
    await settles(() => consumers.length === 2 && consumers[1]?.running === true, 'a new consumer');
    consumers[1]?.joined([0]);
    expect(signals.status()).toEqual({ pausedLocations: [], running: [] });
    expect(signals.health()).toEqual({ ok: true });

    await signals.close();
    expect(consumers[1]?.disconnected).toBe(true);
  });
});
