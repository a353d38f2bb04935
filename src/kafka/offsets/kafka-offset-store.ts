/**
 * OffsetStore over the compacted offsets topic: reads it to its end (read_committed) and keeps the
 * latest value per key of this connector; tombstones remove a location. Keys of other connectors
 * sharing the topic are ignored.
 *
 * Contract: in exactly-once mode, call loadAll() only after the transactional producer was initialised
 * (KafkaSession.start() does it in that order), or a transaction a crashed instance left open holds the
 * read back until the coordinator times it out (kafka.transactionTimeoutMs) or fails it with
 * KAFKA_READ_TIMEOUT. Unreadable values are a FatalError naming the key (see offset-codec).
 */
import type { Kafka } from 'kafkajs';
import type { LocationOffset } from '../../sync/model.js';
import type { OffsetStore } from '../../sync/ports.js';
import { readTopicToEnd } from '../topic-reader.js';
import { decodeOffsetValue, offsetKey, parseOffsetKey } from './offset-codec.js';
import { ReadCoalescer } from './read-coalescer.js';

export interface KafkaOffsetStoreOptions {
  kafka: Kafka;
  topic: string;
  connectorName: string;
  /** Prefix of the throw-away consumer group used per read. */
  groupIdPrefix: string;
  loadTimeoutMs: number;
}

export class KafkaOffsetStore implements OffsetStore {
  private readonly reads = new ReadCoalescer(() => this.read());

  constructor(private readonly options: KafkaOffsetStoreOptions) {}

  /** Concurrent calls share reads (see ReadCoalescer); each caller gets its own Map. */
  async loadAll(): Promise<Map<string, LocationOffset>> {
    return new Map(await this.reads.get());
  }

  /**
   * Distributed mode: reads only `partitions` of the offsets topic to their end, for the locations whose
   * keys hash there (group/location-partition.ts). Not coalesced: each handover reads what it took over.
   */
  async loadPartitions(partitions: readonly number[]): Promise<Map<string, LocationOffset>> {
    if (partitions.length === 0) return new Map();
    return this.read(partitions);
  }

  private async read(partitions?: readonly number[]): Promise<Map<string, LocationOffset>> {
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
        raw.set(parsed.locationUid, record.value);
      },
    );
    const offsets = new Map<string, LocationOffset>();
    for (const [locationUid, value] of raw) {
      // Decoded after the read so that only the latest value of a key matters.
      const offset = decodeOffsetValue(offsetKey(this.options.connectorName, locationUid), value);
      if (offset !== null) offsets.set(locationUid, offset);
    }
    return offsets;
  }
}
