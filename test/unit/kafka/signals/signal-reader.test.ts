/**
 * SignalTopicReader's consumer and kafkajs's own restarts: a retriable crash while it reads is left to kafkajs,
 * but a crash caused by its stop (the disconnect closing a fetch's connection) must not start it again, or the
 * consumer outlives the connector and the process never exits.
 */
import type { ConsumerConfig, Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { SignalTopicReader } from '../../../../src/kafka/signals/signal-reader.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { ManualClock } from '../../../support/clock.js';

/** A kafkajs client holding an empty one-partition topic; it records each consumer's configuration. */
function emptyTopicKafka(configs: ConsumerConfig[]): Kafka {
  const consumer = {
    events: { GROUP_JOIN: 'consumer.group_join', CRASH: 'consumer.crash' },
    on: () => () => undefined,
    connect: () => Promise.resolve(),
    subscribe: () => Promise.resolve(),
    run: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
  };
  const admin = {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    fetchTopicOffsets: () => Promise.resolve([{ partition: 0, low: '0', high: '0', offset: '0' }]),
  };
  return {
    admin: () => admin,
    consumer: (config: ConsumerConfig) => {
      configs.push(config);
      return consumer;
    },
  } as unknown as Kafka;
}

describe('SignalTopicReader', () => {
  it('lets kafkajs restart its consumer after a retriable crash while it reads, and not once it is stopping', async () => {
    const configs: ConsumerConfig[] = [];
    const reader = new SignalTopicReader(emptyTopicKafka(configs), {
      topic: 'offsets-signals',
      connectorName: 'c',
      groupIdPrefix: 'c-signals',
      loadTimeoutMs: 1_000,
      each: () => undefined,
      logger: silentLogger(),
      clock: new ManualClock(0),
    });
    await reader.start();
    const restartOnFailure = configs.at(-1)?.retry?.restartOnFailure;
    expect(restartOnFailure).toBeDefined();
    const crash = new Error('Closed connection');
    expect(await restartOnFailure?.(crash)).toBe(true);

    await reader.stop();
    expect(await restartOnFailure?.(crash)).toBe(false);
  });
});
