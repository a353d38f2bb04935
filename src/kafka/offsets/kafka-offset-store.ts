/**
 * OffsetStore over the compacted offsets topic: reads it to its end (read_committed) and keeps the
 * latest value per key of this connector; tombstones remove a location. Keys of other connectors
 * sharing the topic are ignored.
 *
 * Contract: in exactly-once mode, call loadAll() only after the transactional producer was initialised
 * (the partition handover opens a scope's sink before it reads the scope's offsets), or a transaction a
 * crashed instance left open holds the read back until the coordinator times it out
 * (kafka.transactionTimeoutMs) or fails it with KAFKA_READ_TIMEOUT. Unreadable values are a FatalError
 * naming the key (see offset-codec).
 */
import type { Kafka } from 'kafkajs';
import type { Logger } from '../../logging/logger.js';
import type { LocationOffset } from '../../sync/model.js';
import type { OffsetStore } from '../../sync/ports.js';
import { FatalError, RetriableError } from '../../errors/index.js';
import { describeKafkaError, fatalKafkaErrorType } from '../client/kafka-errors.js';
import { locationPartition } from '../group/location-partition.js';
import { awaitSettledTransactions } from '../topics/stable-offsets.js';
import { readTopicToEnd } from '../topics/topic-reader.js';
import { decodeOffsetValue, offsetKey, parseOffsetKey } from './offset-codec.js';
import { ReadCoalescer } from './read-coalescer.js';

export interface KafkaOffsetStoreOptions {
  kafka: Kafka;
  topic: string;
  connectorName: string;
  /** Prefix of the throw-away consumer group used per read. */
  groupIdPrefix: string;
  loadTimeoutMs: number;
  /**
   * Exactly-once: before each read, wait until every transaction open on the partitions read has ended
   * (topics/stable-offsets.ts), so that a read shows each earlier write as committed or aborted, never as
   * "not there yet": what a sink's read-back after a lost commit outcome must be able to rely on. Past
   * `loadTimeoutMs` the read fails with the RetriableError KAFKA_TRANSACTION_OPEN. Default false (a reader beside a
   * running connector, such as the `offsets` command, would wait for its transactions for nothing).
   */
  awaitOpenTransactions?: boolean;
  /** Says when a read has waited more than a few seconds for an open transaction (default: silent). */
  logger?: Logger;
}

export class KafkaOffsetStore implements OffsetStore {
  private readonly reads = new ReadCoalescer(() => this.read());
  /** The offsets topic's partition count, fetched once (it must never change, location-partition.ts). */
  private partitions: Promise<number> | undefined;

  constructor(private readonly options: KafkaOffsetStoreOptions) {}

  /** Concurrent calls share reads (see ReadCoalescer); each caller gets its own Map. */
  async loadAll(): Promise<Map<string, LocationOffset>> {
    return new Map(await this.reads.get());
  }

  /**
   * Distributed mode: reads only `partitions` of the offsets topic to their end, for the locations whose
   * keys hash there (group/location-partition.ts). Not coalesced: each handover reads what it took over.
   */
  async loadPartitions(
    partitions: readonly number[],
    partitionOf?: (locationUid: string) => number,
  ): Promise<Map<string, LocationOffset>> {
    if (partitions.length === 0) return new Map();
    return this.read(partitions, partitionOf);
  }

  /**
   * The stored offsets of `locationUids` only (those that have one), reading just the partitions their
   * keys hash to: what a sink reads back after a failed commit (sinks/settlement.ts). Another
   * partition's pending transaction holds nothing back, and a large topic is not read whole per failure.
   */
  async loadLocations(locationUids: readonly string[]): Promise<Map<string, LocationOffset>> {
    if (locationUids.length === 0) return new Map();
    const count = await this.partitionCount();
    const partitionOf = (uid: string): number => locationPartition(this.options.connectorName, uid, count);
    const partitions = [...new Set(locationUids.map(partitionOf))].sort((a, b) => a - b);
    const read = await this.read(partitions, partitionOf);
    const offsets = new Map<string, LocationOffset>();
    for (const uid of locationUids) {
      const offset = read.get(uid);
      if (offset !== undefined) offsets.set(uid, offset);
    }
    return offsets;
  }

  /** The offsets topic's partition count, described once (FatalError KAFKA_TOPIC_MISSING when it has none). */
  partitionCount(): Promise<number> {
    this.partitions ??= this.fetchPartitionCount().catch((error: unknown) => {
      this.partitions = undefined; // asked again next time
      throw error;
    });
    return this.partitions;
  }

  private async fetchPartitionCount(): Promise<number> {
    const admin = this.options.kafka.admin();
    let count: number;
    try {
      await admin.connect();
      const { topics } = await admin.fetchTopicMetadata({ topics: [this.options.topic] });
      count = topics[0]?.partitions.length ?? 0;
    } catch (error) {
      const fatalType = fatalKafkaErrorType(error);
      if (fatalType !== undefined)
        throw new FatalError(
          'KAFKA_NOT_PERMITTED',
          `Kafka refused describing ${this.options.topic} (${fatalType}): check the ACLs`,
          { cause: error },
        );
      throw new RetriableError(
        'KAFKA_READ_FAILED',
        `describing ${this.options.topic} failed: ${describeKafkaError(error)}`,
        { cause: error },
      );
    } finally {
      await admin.disconnect();
    }
    if (count < 1)
      throw new FatalError(
        'KAFKA_TOPIC_MISSING',
        `the offsets topic ${this.options.topic} has no partitions`,
      );
    return count;
  }

  /**
   * `partitionOf`: where each location's key belongs; a record of this connector found in another partition
   * means the topic's partition count changed after the record was written (keys moved): FatalError
   * KAFKA_OFFSETS_TOPIC_REPARTITIONED, since the partition's owner would miss the location's history.
   */
  private async read(
    partitions?: readonly number[],
    partitionOf?: (locationUid: string) => number,
  ): Promise<Map<string, LocationOffset>> {
    if (this.options.awaitOpenTransactions === true)
      await awaitSettledTransactions(this.options.kafka, {
        topic: this.options.topic,
        partitions: partitions ?? range(await this.partitionCount()),
        timeoutMs: this.options.loadTimeoutMs,
        onLongWait: (open) =>
          this.options.logger?.warn(
            { topic: this.options.topic, open },
            'an offsets read waits for a transaction still open on the partitions it reads (see KAFKA_TRANSACTION_OPEN in the runbook if it lasts)',
          ),
      });
    let moved: { locationUid: string; partition: number; expected: number } | undefined;
    const raw = new Map<string, Buffer | null>();
    await readTopicToEnd(
      this.options.kafka,
      {
        topic: this.options.topic,
        groupIdPrefix: this.options.groupIdPrefix,
        timeoutMs: this.options.loadTimeoutMs,
        ...(partitions !== undefined && { partitions }),
      },
      (record) => {
        const key = record.key?.toString('utf8');
        if (key === undefined) return;
        const parsed = parseOffsetKey(key);
        if (parsed?.connectorName !== this.options.connectorName) return;
        const expected = partitionOf?.(parsed.locationUid);
        if (expected !== undefined && expected !== record.partition)
          moved ??= { locationUid: parsed.locationUid, partition: record.partition, expected };
        raw.set(parsed.locationUid, record.value);
      },
    );
    if (moved !== undefined) {
      throw new FatalError(
        'KAFKA_OFFSETS_TOPIC_REPARTITIONED',
        `the offset of location ${moved.locationUid} is in partition ${moved.partition} of ${this.options.topic}, ` +
          `but its key hashes to partition ${moved.expected} at the topic's current partition count: the count was ` +
          `changed after offsets were written, so locations lost their history. Restore the count, or move the ` +
          `offsets to a new topic with \`calls-connector offsets\``,
        { details: { ...moved } },
      );
    }
    const offsets = new Map<string, LocationOffset>();
    for (const [locationUid, value] of raw) {
      // Decoded after the read so that only the latest value of a key matters.
      const offset = decodeOffsetValue(offsetKey(this.options.connectorName, locationUid), value);
      if (offset !== null) offsets.set(locationUid, offset);
    }
    return offsets;
  }
}

function range(count: number): number[] {
  return Array.from({ length: count }, (_, i) => i);
}
