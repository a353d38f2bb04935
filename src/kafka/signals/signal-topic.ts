/**
 * The signals topic (`<kafka.offsetsTopic>-signals`, topics.ts signalsTopicSpec): where `calls-connector signal`
 * writes a signal and where the instance owning its location writes the outcome (signal-model.ts).
 *
 * - Partitioned like the offsets topic, each record written to the partition of the location's offset key
 *   `<connectorName>/<locationUid>` (location-partition.ts): a location's signals and outcomes sit in the
 *   partition whose offsets its owner holds, in the order they were sent.
 * - Compacted, keyed `<connectorName>/signal/<id>` and `<connectorName>/outcome/<id>`: a signal is written once,
 *   its outcome replaced as it moves on (accepted, then done); compaction keeps the latest of each.
 * - Written with acks from all in-sync replicas. An outcome that completes a signal with a page (a backfill's
 *   last page, a reset's offset) is meant to go in that page's transaction: `outcomeMessage` is the record to add
 *   to it. Outcomes that complete nothing stored (a refusal, a pause) are written by `SignalTopicWriter.answer`.
 */
import type { Kafka, Message, Producer } from 'kafkajs';
import type { KafkaConfig } from '../../config/schema.js';
import { FatalError } from '../../errors/index.js';
import { keyPartition } from '../group/location-partition.js';
import { offsetKey } from '../offsets/offset-codec.js';
import type { SignalDoneMessage } from '../records/page-messages.js';
import { ensureTopics, signalsTopicSpec, topicExists, topicPartitionCount } from '../topics/topics.js';
import {
  encodeOutcome,
  encodeSignal,
  outcomeKey,
  signalKey,
  type Signal,
  type SignalOutcome,
} from './signal-model.js';

/** Where a signal or an outcome was written. */
export interface WrittenAt {
  partition: number;
  offset: string;
}

/**
 * Creates the signals topic (when `kafka.createTopics`) or checks an existing one is compacted; returns its
 * partition count, which must be the offsets topic's (an existing offsets topic's count, else the configured one
 * for a topic created here). With no offsets topic yet, an existing signals topic's count is taken as it is: the
 * instances that created it chose it.
 */
export async function ensureSignalTopic(kafka: Kafka, config: KafkaConfig): Promise<number> {
  const spec = signalsTopicSpec(config);
  const offsetsPartitions = (await topicExists(kafka, config.offsetsTopic))
    ? await topicPartitionCount(kafka, config.offsetsTopic)
    : null;
  await ensureTopics(
    kafka,
    [{ ...spec, partitions: offsetsPartitions ?? spec.partitions }],
    config.createTopics,
  );
  const partitions = await topicPartitionCount(kafka, spec.topic);
  if (offsetsPartitions !== null && partitions !== offsetsPartitions) {
    throw new FatalError(
      'KAFKA_TOPIC_PARTITIONS_MISMATCH',
      `topic ${spec.topic} has ${partitions} partitions, but the offsets topic has ${offsetsPartitions}: ` +
        'signals would reach the wrong instances. Recreate it with that count (it holds signals and the paused ' +
        'state: send the pauses again afterwards).',
    );
  }
  return partitions;
}

/** The record of an outcome, to be sent to the signals topic (alone, or inside a page's transaction). */
export function outcomeMessage(
  options: { connectorName: string; partitionCount: number },
  location: string,
  outcome: SignalOutcome,
): Message & { partition: number } {
  return {
    key: outcomeKey(options.connectorName, outcome.signalId),
    partition: locationSignalPartition(options, location),
    value: encodeOutcome(outcome),
  };
}

/**
 * The `done` outcome record of a signal, built when a page completes it (exactly once: written in the page's
 * transaction, kafka/records/page-messages.ts), naming `instance` as the answer's author.
 */
export function signalDoneMessage(options: {
  connectorName: string;
  partitionCount: number;
  instance: string;
}): SignalDoneMessage {
  return (location, signalId, now) =>
    outcomeMessage(options, location, {
      signalId,
      state: 'done',
      at: now.toISOString(),
      instance: options.instance,
    });
}

function locationSignalPartition(
  options: { connectorName: string; partitionCount: number },
  location: string,
): number {
  return keyPartition(offsetKey(options.connectorName, location), options.partitionCount);
}

/** Writes signals and outcomes outside any transaction; each write resolves once all in-sync replicas have it. */
export class SignalTopicWriter {
  private constructor(
    private readonly producer: Producer,
    private readonly options: { topic: string; connectorName: string; partitionCount: number },
  ) {}

  /**
   * A writer on an idempotent producer (one request in flight: records keep their order), connected. A connect
   * that fails disconnects the producer (the brokers it reached) before it rejects: nothing is left open.
   */
  static async connect(
    kafka: Kafka,
    options: { topic: string; connectorName: string; partitionCount: number },
  ): Promise<SignalTopicWriter> {
    const producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
    });
    try {
      await producer.connect();
    } catch (error) {
      await producer.disconnect().catch(() => undefined);
      throw error;
    }
    return new SignalTopicWriter(producer, options);
  }

  async send(signal: Signal): Promise<WrittenAt> {
    return this.write({
      key: signalKey(this.options.connectorName, signal.id),
      partition: locationSignalPartition(this.options, signal.location),
      value: encodeSignal(signal),
    });
  }

  /** Writes the outcome of a signal about `location` (the partition is the location's). */
  async answer(location: string, outcome: SignalOutcome): Promise<WrittenAt> {
    return this.write(outcomeMessage(this.options, location, outcome));
  }

  /** Writes an outcome to `partition`: that of its signal (one whose location cannot be read, refused). */
  async answerAt(partition: number, outcome: SignalOutcome): Promise<WrittenAt> {
    return this.write({
      key: outcomeKey(this.options.connectorName, outcome.signalId),
      partition,
      value: encodeOutcome(outcome),
    });
  }

  /** The signals topic's partition count (the offsets topic's). */
  get partitionCount(): number {
    return this.options.partitionCount;
  }

  /** The partition of a location's signals. */
  partitionOf(location: string): number {
    return locationSignalPartition(this.options, location);
  }

  async disconnect(): Promise<void> {
    await this.producer.disconnect();
  }

  private async write(message: Message & { partition: number }): Promise<WrittenAt> {
    const [metadata] = await this.producer.send({ topic: this.options.topic, acks: -1, messages: [message] });
    return { partition: message.partition, offset: metadata?.baseOffset ?? '-1' };
  }
}
