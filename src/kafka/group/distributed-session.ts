/**
 * Kafka for `connector.mode: distributed`: what KafkaSession gives single mode (topics, schemas, offset store),
 * but no producer and no offsets at start. Partitions of the offsets topic are taken over one by one as the
 * group assigns them (runtime/partition-handover.ts): `openPartitionSink(P)` then `loadPartitions([P])`, in
 * that order (the producer's initialisation fences the previous owner and settles its open transaction
 * before the read, as KafkaSession does at start).
 *
 * Exactly-once: one transactional producer per partition taken over, transactional id
 * `<transactionalIdFor(connector.name)>-p<partition>`. At-least-once (`kafka.exactlyOnce: false`): one shared
 * idempotent producer for every partition; nothing fences a paused instance then, so a zombie may publish a
 * page the new owner publishes too: duplicates, which at-least-once allows, never loss.
 *
 * Contract: `start()` once (it opens nothing: the shared at-least-once sink starts with the first partition
 * sink); `close()` at shutdown after every partition sink was closed, and before the group is left.
 */
import type { Kafka } from 'kafkajs';
import { FatalError } from '../../errors/index.js';
import type { LocationOffset } from '../../sync/model.js';
import type { KafkaOffsetStore } from '../offsets/kafka-offset-store.js';
import { prepareKafka, type KafkaGround, type KafkaSessionOptions, type SessionSink } from '../session.js';
import { transactionalIdFor } from '../sinks/transactional-sink.js';
import { locationPartition } from './location-partition.js';

/** The transactional id of one partition's producer in distributed mode. */
export function partitionTransactionalId(connectorName: string, partition: number): string {
  return `${transactionalIdFor(connectorName)}-p${partition}`;
}

export class DistributedKafkaSession {
  private constructor(
    private readonly ground: KafkaGround,
    private readonly options: KafkaSessionOptions,
    /** Partitions of the offsets topic: the most instances that can share the work. */
    readonly partitionCount: number,
  ) {}

  /** At least once: the one idempotent producer of every partition, started with the first partition's sink. */
  private shared: Promise<SessionSink> | null = null;

  static async start(options: KafkaSessionOptions): Promise<DistributedKafkaSession> {
    const ground = await prepareKafka(options);
    const { config, logger } = options;
    const admin = ground.kafka.admin();
    await admin.connect();
    let partitionCount: number;
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [config.kafka.offsetsTopic] });
      partitionCount = topics[0]?.partitions.length ?? 0;
    } finally {
      await admin.disconnect();
    }
    if (partitionCount < 1)
      throw new FatalError(
        'KAFKA_TOPIC_MISSING',
        `the offsets topic ${config.kafka.offsetsTopic} has no partitions`,
      );
    if (partitionCount === 1)
      logger.warn(
        { offsetsTopic: config.kafka.offsetsTopic },
        'the offsets topic has 1 partition: in distributed mode only one instance at a time does work (parallelism 1); a topic created with kafka.offsetsTopicPartitions spreads the locations, but an existing topic keeps its count',
      );
    return new DistributedKafkaSession(ground, options, partitionCount);
  }

  get kafka(): Kafka {
    return this.ground.kafka;
  }

  get offsetStore(): KafkaOffsetStore {
    return this.ground.offsetStore;
  }

  get boundaryMaxBytes(): number {
    return this.ground.boundaryMaxBytes;
  }

  /** Builds and starts partition P's sink (exactly-once: initialising it fences P's previous owner). */
  async openPartitionSink(
    partition: number,
    takenOver: () => void,
  ): Promise<{
    commitPage: SessionSink['commitPage'];
    generation?: () => number;
    close(timeoutMs?: number): Promise<void>;
  }> {
    if (!this.options.config.kafka.exactlyOnce) {
      const shared = await this.sharedSink();
      return { commitPage: (commit) => shared.commitPage(commit), close: () => Promise.resolve() };
    }
    const sink = this.ground.buildSink(
      partitionTransactionalId(this.options.config.connector.name, partition),
      this.options.onFatal,
      takenOver,
    );
    await sink.start();
    return sink;
  }

  /**
   * Reads the partitions to their end. A location's offset found outside its partition (the topic's partition
   * count changed) is fatal for the whole process (`onFatal`): no owner could see its history.
   */
  async loadPartitions(partitions: readonly number[]): Promise<Map<string, LocationOffset>> {
    const name = this.options.config.connector.name;
    try {
      return await this.ground.offsetStore.loadPartitions(partitions, (uid) =>
        locationPartition(name, uid, this.partitionCount),
      );
    } catch (error) {
      if (error instanceof FatalError && error.code === 'KAFKA_OFFSETS_TOPIC_REPARTITIONED')
        this.options.onFatal?.(error);
      throw error;
    }
  }

  async close(timeoutMs?: number): Promise<void> {
    const shared = await this.shared?.catch(() => null);
    await shared?.close(timeoutMs);
  }

  private sharedSink(): Promise<SessionSink> {
    this.shared ??= (async () => {
      const sink = this.ground.buildSink(
        transactionalIdFor(this.options.config.connector.name),
        this.options.onFatal,
      );
      await sink.start();
      return sink;
    })().catch((error: unknown) => {
      this.shared = null; // the next partition taken over tries again
      throw error;
    });
    return this.shared;
  }
}
