/**
 * The nudge topic (`<kafka.offsetsTopic>-nudges`, distributed mode): a webhook delivery reaches whichever
 * instance the load balancer picked, and its nudge travels here to the instance that owns the location.
 *
 * - Partitioned like the offsets topic: as many partitions, and each record written to the partition of its
 *   key `<connectorName>/<locationUid>` (location-partition.ts, the offsets topic's own partitioner), so a
 *   location's nudges sit in the partition whose offsets its owner holds.
 * - Written with acks from all in-sync replicas before the receiver acknowledges the delivery (a failed write
 *   rejects, the receiver answers 503 and the API retries).
 * - Read by every instance (nudge-reader.ts, a consumer group of its own that never commits, from the instance's
 *   start and, after any rejoin, from where it stopped): each nudges only the locations its scheduler runs,
 *   which are exactly those of the partitions it owns; others are skipped. kafkajs has no manual partition
 *   assignment, and nudges are a few bytes each, so reading every partition costs little. A nudge read while its
 *   location changes owner may reach neither owner: the new owner polls the location when it takes it over.
 * - Retention is short (an hour): a nudge is worth something for seconds.
 */
import type { Kafka, Producer } from 'kafkajs';
import { FatalError } from '../../errors/index.js';
import { keyPartition } from '../group/location-partition.js';
import { offsetKey } from '../offsets/offset-codec.js';
import { ensureTopics, topicPartitionCount } from '../topics/topics.js';

/** One nudge for one location, as the topic carries it. */
export interface NudgeMessage {
  location: string;
  uid: string;
  event: string;
}

export function nudgeTopicName(offsetsTopic: string): string {
  return `${offsetsTopic}-nudges`;
}

/** Creates the nudge topic with the offsets topic's partition count, or checks an existing one has it. */
export async function ensureNudgeTopic(
  kafka: Kafka,
  options: { topic: string; partitions: number; replicationFactor: number; create: boolean },
): Promise<void> {
  await ensureTopics(
    kafka,
    [
      {
        topic: options.topic,
        partitions: options.partitions,
        replicationFactor: options.replicationFactor,
        configs: { 'retention.ms': String(3_600_000) },
        configKey: 'kafka.offsetsTopic (its -nudges topic)',
      },
    ],
    options.create,
  );
  const partitions = await topicPartitionCount(kafka, options.topic);
  if (partitions !== options.partitions) {
    throw new FatalError(
      'KAFKA_TOPIC_PARTITIONS_MISMATCH',
      `topic ${options.topic} has ${partitions} partitions, but the offsets topic has ${options.partitions}: ` +
        'nudges would reach the wrong instances. Delete it (it holds only transient nudges) and restart.',
    );
  }
}

export function encodeNudge(message: NudgeMessage): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, ...message }), 'utf8');
}

/** The nudge a record carries; null for a record that is not one (skipped, never fatal). */
export function decodeNudge(value: Buffer | null): NudgeMessage | null {
  if (value === null) return null;
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return null;
    const { location, uid, event } = parsed as Record<string, unknown>;
    if (typeof location !== 'string' || typeof uid !== 'string' || typeof event !== 'string') return null;
    return { location, uid, event };
  } catch {
    return null;
  }
}

/** Writes nudges, each to its location's partition; `write` resolves once all in-sync replicas have them. */
export class NudgeTopicWriter {
  private readonly producer: Producer;

  constructor(
    kafka: Kafka,
    private readonly options: { topic: string; connectorName: string; partitionCount: number },
  ) {
    this.producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
    });
  }

  async connect(): Promise<void> {
    await this.producer.connect();
  }

  async write(messages: readonly NudgeMessage[]): Promise<void> {
    const { topic, connectorName, partitionCount } = this.options;
    await this.producer.send({
      topic,
      acks: -1,
      messages: messages.map((message) => {
        const key = offsetKey(connectorName, message.location);
        return { key, partition: keyPartition(key, partitionCount), value: encodeNudge(message) };
      }),
    });
  }

  async disconnect(): Promise<void> {
    await this.producer.disconnect();
  }
}
