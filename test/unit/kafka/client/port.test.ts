import type { ConsumerConfig, ConsumerRunConfig, ProducerConfig, ProducerRecord } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  connectDurableProducer,
  topicConsumer,
  type KafkaClient,
} from '../../../../src/kafka/client/port.js';

describe('connectDurableProducer', () => {
  it('connects an idempotent producer with one request in flight and sends keyed records acknowledged by all replicas', async () => {
    const configs: ProducerConfig[] = [];
    const sent: ProducerRecord[] = [];
    const calls: string[] = [];
    const client = {
      producer: (config: ProducerConfig) => {
        configs.push(config);
        return {
          connect: async () => void calls.push('connect'),
          send: async (record: ProducerRecord) => void sent.push(record),
          disconnect: async () => void calls.push('disconnect'),
        };
      },
    } as unknown as KafkaClient;

    const producer = await connectDurableProducer(client);
    await producer.send('tokens', [
      { key: 'grant:a', value: Buffer.from('sealed') },
      { key: 'state:b', value: null },
    ]);
    await producer.disconnect();

    expect(configs).toEqual([{ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false }]);
    expect(sent).toEqual([
      {
        topic: 'tokens',
        acks: -1,
        messages: [
          { key: 'grant:a', value: Buffer.from('sealed') },
          { key: 'state:b', value: null },
        ],
      },
    ]);
    expect(calls).toEqual(['connect', 'disconnect']);
  });
});

describe('topicConsumer', () => {
  it('reads one topic in a group of its own without committing, handing each record with its partition', async () => {
    const groups: ConsumerConfig[] = [];
    const subscriptions: unknown[] = [];
    let autoCommit: boolean | undefined;
    const client = {
      consumer: (config: ConsumerConfig) => {
        groups.push(config);
        return {
          connect: async () => undefined,
          subscribe: async (subscription: unknown) => void subscriptions.push(subscription),
          run: async (run: ConsumerRunConfig) => {
            autoCommit = run.autoCommit;
            const message = {
              offset: '7',
              timestamp: '0',
              key: null,
              value: Buffer.from('v'),
              attributes: 0,
            };
            await run.eachMessage?.({ topic: 'calls', partition: 2, message } as never);
          },
          disconnect: async () => undefined,
        };
      },
    } as unknown as KafkaClient;
    const seen: Array<[number, string]> = [];

    const consumer = topicConsumer(client, 'connector-tail-1');
    await consumer.connect();
    await consumer.subscribe('calls', { fromBeginning: true });
    await consumer.run(async (partition, record) => void seen.push([partition, record.offset]));

    expect(groups).toEqual([{ groupId: 'connector-tail-1' }]);
    expect(subscriptions).toEqual([{ topic: 'calls', fromBeginning: true }]);
    expect(autoCommit).toBe(false);
    expect(seen).toEqual([[2, '7']]);
  });
});
