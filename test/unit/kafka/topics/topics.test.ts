/** ensureTopics against a fake admin: what it asks Kafka for when topics are missing. */
import type { Admin, ITopicConfig, Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ensureTopics, type TopicSpec } from '../../../../src/kafka/topics/topics.js';
import { protocolError } from '../../../support/kafka-errors.js';

const dlq: TopicSpec = { topic: 'dlq', partitions: 1, replicationFactor: 1, configKey: 'kafka.dlqTopic' };

/** A Kafka whose admin lists no topic and answers the topics' metadata with `metadataErrors`, then with none. */
function fakeKafka(metadataErrors: string[]): {
  kafka: Kafka;
  created: Array<{ topics: ITopicConfig[]; waitForLeaders?: boolean }>;
  metadataAsked: string[][];
} {
  const created: Array<{ topics: ITopicConfig[]; waitForLeaders?: boolean }> = [];
  const metadataAsked: string[][] = [];
  const admin: Pick<Admin, 'connect' | 'disconnect' | 'listTopics' | 'createTopics' | 'fetchTopicMetadata'> =
    {
      connect: () => Promise.resolve(),
      disconnect: () => Promise.resolve(),
      listTopics: () => Promise.resolve([]),
      createTopics: (options) => {
        created.push(options);
        return Promise.resolve(true);
      },
      fetchTopicMetadata: (options) => {
        metadataAsked.push(options?.topics ?? []);
        const type = metadataErrors.shift();
        return type === undefined ? Promise.resolve({ topics: [] }) : Promise.reject(protocolError(type));
      },
    };
  return { kafka: { admin: () => admin } as unknown as Kafka, created, metadataAsked };
}

describe('ensureTopics', () => {
  it("creates the missing topics, then waits while the broker's metadata does not know them yet, instead of failing", async () => {
    // kafkajs's waitForLeaders gave up on this answer, which a KRaft broker gives for a moment after a creation.
    const { kafka, created, metadataAsked } = fakeKafka(['UNKNOWN_TOPIC_OR_PARTITION']);
    await ensureTopics(kafka, [dlq], true);
    expect(created).toEqual([
      {
        waitForLeaders: false,
        topics: [{ topic: 'dlq', numPartitions: 1, replicationFactor: 1, configEntries: [] }],
      },
    ]);
    expect(metadataAsked).toEqual([['dlq'], ['dlq']]);
  });
});
