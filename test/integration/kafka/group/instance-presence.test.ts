/**
 * The instances group's member on the real broker: it stays a member (heartbeats) and reads nothing of the
 * offsets topic, so an idle connector's group membership is a heartbeat every few seconds, not a fetch request
 * every `maxWaitTimeInMs`.
 */
import type { Consumer, ConsumerConfig } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { InstancePresence } from '../../../../src/kafka/group/instance-presence.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { createTopics, eventually, testKafka } from '../../../support/kafka.js';
import { uniqueName } from '../../../support/stack.js';

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

describe('InstancePresence on the broker', () => {
  it('heartbeats as a member of the instances group while sending no fetch request (single mode)', async () => {
    const kafka = testKafka();
    const offsetsTopic = uniqueName('offsets');
    await createTopics(kafka, [{ topic: offsetsTopic, numPartitions: 3 }]);
    // The presence's own consumer, kept to watch its requests and heartbeats.
    let consumer: Consumer | undefined;
    const consumerOf = kafka.consumer.bind(kafka);
    kafka.consumer = (config: ConsumerConfig) => (consumer = consumerOf(config));
    const presence = await InstancePresence.join(kafka, uniqueName('connector'), offsetsTopic, {
      logger: silentLogger(),
    });
    closing.push(() => presence.leave());
    if (consumer === undefined) throw new Error('the presence made no consumer');
    const watched = consumer;

    await eventually(() => presence.joins >= 1, 30_000, 'the first join');
    let fetches = 0;
    let heartbeats = 0;
    watched.on(watched.events.REQUEST, ({ payload }) => {
      if (payload.apiName === 'Fetch') fetches += 1;
    });
    watched.on(watched.events.HEARTBEAT, () => {
      heartbeats += 1;
    });
    // Three heartbeats (one per heartbeatInterval, 2 s): the member is alive, its fetch loop has turned many times.
    await eventually(() => heartbeats >= 3, 30_000, 'three heartbeats');

    expect(fetches).toBe(0);
    expect(presence.joins).toBe(1);
  });
});
