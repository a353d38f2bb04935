/** The signals topic on the real broker: created with the offsets topic's partition count, checked against it. */
import { describe, expect, it } from 'vitest';
import { ensureSignalTopic } from '../../../../src/kafka/signals/signal-topic.js';
import { signalsTopicName, topicPartitionCount } from '../../../../src/kafka/topics/topics.js';
import { createTopics, testKafka, testKafkaConfig } from '../../../support/kafka.js';

describe('the signals topic', () => {
  it('takes the partition count of the existing offsets topic, not the configured one', async () => {
    const kafka = testKafka();
    const config = testKafkaConfig({ offsetsTopicPartitions: 5 });
    await createTopics(kafka, [{ topic: config.offsetsTopic, numPartitions: 2 }]);
    expect(await ensureSignalTopic(kafka, config)).toBe(2);
    expect(await topicPartitionCount(kafka, signalsTopicName(config.offsetsTopic))).toBe(2);
  });

  it('refuses a signals topic whose partition count differs from the offsets topic’s, saying what to do', async () => {
    const kafka = testKafka();
    const config = testKafkaConfig();
    await createTopics(kafka, [
      { topic: config.offsetsTopic, numPartitions: 2 },
      {
        topic: signalsTopicName(config.offsetsTopic),
        numPartitions: 3,
        configEntries: [{ name: 'cleanup.policy', value: 'compact' }],
      },
    ]);
    await expect(ensureSignalTopic(kafka, config)).rejects.toMatchObject({
      code: 'KAFKA_TOPIC_PARTITIONS_MISMATCH',
      message: expect.stringContaining('has 3 partitions, but the offsets topic has 2') as unknown,
    });
  });

  it('refuses a signals topic that is not compacted: the paused state would be deleted by retention', async () => {
    const kafka = testKafka();
    const config = testKafkaConfig();
    await createTopics(kafka, [{ topic: signalsTopicName(config.offsetsTopic) }]);
    await expect(ensureSignalTopic(kafka, config)).rejects.toMatchObject({
      code: 'KAFKA_TOPIC_NOT_COMPACTED',
    });
  });
});
