/**
 * The Kafka client port: all that code outside src/kafka/ knows of a Kafka client. kafkajs is imported only under
 * src/kafka/ (lint-enforced in eslint.config.js); runtime, auth and cli name these types and call these factories.
 *
 * Aim: a second client (`@confluentinc/kafka-javascript`, librdkafka-based, maintained) can later be added behind
 * this port without touching the sinks' logic or anything outside src/kafka/. It would bring its own construction
 * beside client/kafkajs-client.ts, and its own side of what this file declares; the sinks (kafka/sinks/) and the
 * offset store (kafka/offsets/) would then take their producers from a factory here instead of from the handle.
 * That client is not added today.
 *
 * Kept small on purpose, to what the rest of the code needs, not a re-export of kafkajs:
 * - `KafkaClient`: the handle `createKafka` builds once at start-up (and once per one-shot CLI command). Outside
 *   src/kafka/ it is opaque: it is only handed back to src/kafka/ functions, never called.
 * - `KafkaAdmin`: the admin operations the runtime calls itself (readiness, the unowned-partitions gauge).
 * - `connectDurableProducer`: keyed records acknowledged by all in-sync replicas (the token store's topic).
 * - `topicConsumer`: a throw-away consumer group that reads one topic and never commits (the `tail` command).
 */
import type { Admin, Consumer, Kafka } from 'kafkajs';

/** The Kafka client handle (today a kafkajs `Kafka`). */
export type KafkaClient = Kafka;

/** The admin operations used outside src/kafka/; connected once, disconnected at close. */
export type KafkaAdmin = Pick<Admin, 'connect' | 'disconnect' | 'describeCluster' | 'describeGroups'>;

/** Header values as Kafka delivers them: bytes (or text when written as text), repeated headers as arrays. */
export type RecordHeaders = Readonly<Record<string, Buffer | string | (Buffer | string)[] | undefined>>;

/** One record as a consumer receives it. */
export interface ConsumedRecord {
  offset: string;
  /** Milliseconds since the epoch, as text (Kafka's record timestamp). */
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: RecordHeaders;
}

/** A keyed record to write; a null value is a tombstone. */
export interface KeyedRecord {
  key: string;
  value: Buffer | null;
}

/** An idempotent producer; `send` resolves once all in-sync replicas have the records (acks=-1). */
export interface DurableProducer {
  send(topic: string, records: readonly KeyedRecord[]): Promise<void>;
  disconnect(): Promise<void>;
}

/** Connects an idempotent producer, one request in flight (records keep their order), no topic auto-creation. */
export async function connectDurableProducer(client: KafkaClient): Promise<DurableProducer> {
  const producer = client.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
  });
  await producer.connect();
  return {
    send: async (topic, records) => {
      await producer.send({ topic, acks: -1, messages: records.map(({ key, value }) => ({ key, value })) });
    },
    disconnect: () => producer.disconnect(),
  };
}

/** A consumer of one group that never commits: reading moves nobody's position. */
export interface TopicConsumer {
  connect(): Promise<void>;
  subscribe(topic: string, options: { fromBeginning: boolean }): Promise<void>;
  /** Resolves once running; `each` is called per record, in order within a partition. Failures reject it. */
  run(each: (partition: number, record: ConsumedRecord) => Promise<void>): Promise<void>;
  disconnect(): Promise<void>;
}

export function topicConsumer(client: KafkaClient, groupId: string): TopicConsumer {
  const consumer: Consumer = client.consumer({ groupId });
  return {
    connect: () => consumer.connect(),
    subscribe: (topic, { fromBeginning }) => consumer.subscribe({ topic, fromBeginning }),
    run: (each) =>
      consumer.run({ autoCommit: false, eachMessage: ({ partition, message }) => each(partition, message) }),
    disconnect: () => consumer.disconnect(),
  };
}
