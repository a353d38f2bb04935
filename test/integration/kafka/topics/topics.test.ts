/** Topic set-up: created with the right partitions and policies, and refused when unsafe or missing. */
import { ConfigResourceTypes } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { FatalError } from '../../../../src/errors/index.js';
import { topicMaxMessageBytesIfKnown } from '../../../../src/kafka/topics/topic-limits.js';
import {
  ensureCompactedTopic,
  ensureConnectorTopics,
  topicMaxMessageBytes,
} from '../../../../src/kafka/topics/topics.js';
import { createTopics, startTestSession, testKafka, testKafkaConfig } from '../../../support/kafka.js';
import { uniqueName } from '../../../support/stack.js';
import { rejectionOf } from '../../../support/rejection.js';

async function describeTopic(
  topic: string,
): Promise<{ partitions: number; cleanupPolicy: string | undefined }> {
  const admin = testKafka().admin();
  await admin.connect();
  try {
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    const configs = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['cleanup.policy'] }],
    });
    return {
      partitions: metadata.topics[0]?.partitions.length ?? 0,
      cleanupPolicy: configs.resources[0]?.configEntries.find((e) => e.configName === 'cleanup.policy')
        ?.configValue,
    };
  } finally {
    await admin.disconnect();
  }
}

async function failure(promise: Promise<unknown>): Promise<FatalError> {
  const error = await rejectionOf(promise);
  expect(error).toBeInstanceOf(FatalError);
  return error as FatalError;
}

describe('topicMaxMessageBytesIfKnown', () => {
  it("reads the topic's max.message.bytes, and gives undefined for a topic that does not exist", async () => {
    const topic = uniqueName('limits');
    await createTopics(testKafka(), [
      { topic, configEntries: [{ name: 'max.message.bytes', value: '50000' }] },
    ]);
    expect(await topicMaxMessageBytesIfKnown(testKafka(), topic)).toBe(50_000);
    expect(await topicMaxMessageBytesIfKnown(testKafka(), uniqueName('missing'))).toBeUndefined();
  });
});

describe('connector topics', () => {
  it('creates the compacted calls and offsets topics and the dead-letter topic when missing, and accepts them on the next start', async () => {
    const config = testKafkaConfig({ topicPartitions: 4, offsetsTopicPartitions: 3 });
    await ensureConnectorTopics(testKafka(), config);
    await ensureConnectorTopics(testKafka(), config);

    expect(await describeTopic(config.topic)).toEqual({ partitions: 4, cleanupPolicy: 'compact' });
    expect(await describeTopic(config.offsetsTopic)).toEqual({ partitions: 3, cleanupPolicy: 'compact' });
    expect(await describeTopic(config.dlqTopic)).toEqual({ partitions: 1, cleanupPolicy: 'delete' });
  });

  it('creates the calls topic with the configured kafka.topicCleanupPolicy', async () => {
    const config = testKafkaConfig({ topicCleanupPolicy: 'delete' });
    await ensureConnectorTopics(testKafka(), config);

    expect((await describeTopic(config.topic)).cleanupPolicy).toBe('delete');
  });

  it('reads the largest record batch a topic accepts', async () => {
    const config = testKafkaConfig();
    await createTopics(testKafka(), [
      { topic: config.offsetsTopic, configEntries: [{ name: 'max.message.bytes', value: '200000' }] },
    ]);
    const admin = testKafka().admin();
    await admin.connect();
    try {
      expect(await topicMaxMessageBytes(admin, config.offsetsTopic)).toBe(200_000);
    } finally {
      await admin.disconnect();
    }
  });

  it('refuses to start a session whose boundary cap the offsets topic cannot hold, before its producer fences anyone', async () => {
    const kafka = testKafkaConfig();
    await createTopics(testKafka(), [
      {
        topic: kafka.offsetsTopic,
        configEntries: [
          { name: 'cleanup.policy', value: 'compact' },
          { name: 'max.message.bytes', value: '100000' },
        ],
      },
    ]);
    const error = await failure(startTestSession({ kafka, boundaryCap: 5_000 }));
    expect(error.code).toBe('CONFIG_BOUNDARY_CAP_TOO_LARGE');
    expect(error.message).toContain(kafka.offsetsTopic);
  });

  it('refuses an existing offsets topic that is not compacted, naming the topic and the fix', async () => {
    const config = testKafkaConfig();
    await createTopics(testKafka(), [
      { topic: config.offsetsTopic, configEntries: [{ name: 'cleanup.policy', value: 'compact,delete' }] },
    ]);

    const error = await failure(ensureConnectorTopics(testKafka(), config));
    expect(error.code).toBe('KAFKA_TOPIC_NOT_COMPACTED');
    expect(error.message).toContain(config.offsetsTopic);
    expect(error.message).toContain('cleanup.policy=compact');
  });

  it('reports missing topics instead of creating them when kafka.createTopics is false', async () => {
    const config = testKafkaConfig({ createTopics: false });
    const error = await failure(ensureConnectorTopics(testKafka(), config));
    expect(error.code).toBe('KAFKA_TOPIC_MISSING');
    expect(error.message).toContain(`${config.topic} (kafka.topic)`);
    expect(error.message).toContain(`${config.offsetsTopic} (kafka.offsetsTopic)`);
  });

  it('creates a compacted single-partition topic for the token store and refuses a non-compacted one', async () => {
    const tokens = uniqueName('tokens');
    await ensureCompactedTopic(testKafka(), tokens, {
      replicationFactor: 1,
      create: true,
      configKey: 'oauth.store.topic',
    });
    expect(await describeTopic(tokens)).toEqual({ partitions: 1, cleanupPolicy: 'compact' });

    const plain = uniqueName('tokens-plain');
    await createTopics(testKafka(), [{ topic: plain }]);
    const error = await failure(
      ensureCompactedTopic(testKafka(), plain, {
        replicationFactor: 1,
        create: true,
        configKey: 'oauth.store.topic',
      }),
    );
    expect(error.message).toContain('oauth.store.topic');
  });
});
