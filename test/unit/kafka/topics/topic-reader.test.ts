import { KafkaJSConnectionError, KafkaJSProtocolError, type Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import { readTopicToEnd } from '../../../../src/kafka/topics/topic-reader.js';

/** A Kafka client whose admin fails to connect with `error`: the read fails before any consumer starts. */
function kafkaFailingWith(error: Error): Kafka {
  const admin = {
    connect: () => Promise.reject(error),
    disconnect: () => Promise.resolve(),
    fetchTopicOffsets: () => Promise.reject(new Error('not connected')),
  };
  return { admin: () => admin } as unknown as Kafka;
}

const read = (kafka: Kafka) =>
  readTopicToEnd(kafka, { topic: 'offsets', groupIdPrefix: 'test', timeoutMs: 1_000 }, () => {});

describe('readTopicToEnd', () => {
  it('reports a broker it cannot reach as retriable, so a location reading its offset is not stopped', async () => {
    const error = await read(
      kafkaFailingWith(new KafkaJSConnectionError('Connection error: ECONNREFUSED')),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetriableError);
    expect(error).toMatchObject({ code: 'KAFKA_READ_FAILED' });
  });

  it('reports a refused authorization as fatal', async () => {
    const denied = new KafkaJSProtocolError('Not authorized to access topics');
    Object.assign(denied, { type: 'TOPIC_AUTHORIZATION_FAILED' });
    const error = await read(kafkaFailingWith(denied)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FatalError);
    expect(error).toMatchObject({ code: 'KAFKA_NOT_PERMITTED' });
  });

  it('lets a programmer error through unwrapped', async () => {
    const bug = new TypeError('boom');
    await expect(read(kafkaFailingWith(bug))).rejects.toBe(bug);
  });
});
