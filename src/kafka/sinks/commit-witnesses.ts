/**
 * What the exactly-once sink knows of where a transaction's records landed, to tell after a commit of unknown
 * outcome whether Kafka published them (a broker killed inside a commit; see sync/location/commit-outcome.ts). A broker
 * killed inside a commit can leave some partitions' records of a committed transaction without their marker,
 * and an operator's `kafka-transactions.sh abort` then removes them: the transaction is visible on some
 * partitions only. The sink keeps, per partition it wrote outside the offsets topic, the offset of its first
 * record (from the produce answers: `Witnesses`), asks Kafka which of them a read_committed reader sees
 * (`PublishedCheck`), and writes again what was lost (`lostPart`).
 */
import type { Message, RecordMetadata } from 'kafkajs';
import { keyPartition } from '../group/location-partition.js';
import { partOf, type PageMessages, type SinkTopics } from '../records/page-messages.js';

/** Where one record of a transaction landed, as the produce answer gave it. */
export interface RecordPosition {
  topic: string;
  partition: number;
  offset: string;
}

/** Reads single records read_committed (session.ts implements it with topics/topic-reader.ts). */
export interface PublishedCheck {
  /**
   * Per position (same order): true when the record there is visible to read_committed readers (its
   * transaction committed on that partition), false when it is not (aborted there), undefined when it cannot
   * tell (the record is gone: retention). Rejects with a RetriableError while a record's transaction is still
   * open on its partition (ask again later), and with a FatalError when Kafka refuses the read (no Read ACL).
   */
  visible(positions: readonly RecordPosition[]): Promise<Array<boolean | undefined>>;
}

/** The first record the transaction wrote on each partition outside the offsets topic, as sends answer. */
export class Witnesses {
  private readonly byPartition = new Map<string, RecordPosition>();

  constructor(private readonly offsetsTopic: string) {}

  /** Takes a sendBatch's answers (kafkajs: per topic and partition, the base offset of what it appended). */
  add(answers: readonly RecordMetadata[] | undefined): void {
    for (const a of answers ?? []) {
      if (a.errorCode !== 0 || a.baseOffset === undefined) continue;
      const key = `${a.topicName}/${a.partition}`;
      if (!this.byPartition.has(key))
        this.byPartition.set(key, { topic: a.topicName, partition: a.partition, offset: a.baseOffset });
    }
  }

  /** The witnesses: the first record on each partition outside the offsets topic. */
  positions(): RecordPosition[] {
    return this.firsts().filter((p) => p.topic !== this.offsetsTopic);
  }

  /**
   * The first record on every partition the transaction wrote, the offsets topic's included: where the
   * transaction begins on each (what tells a hanging transaction of ours, hanging-transaction-heal-rule.ts).
   */
  firsts(): RecordPosition[] {
    return [...this.byPartition.values()];
  }
}

/**
 * The partition count of each topic with a lost partition, asked once per settled write; undefined for a topic
 * whose count cannot be had (then every record of it goes again, see lostPart).
 */
export async function lostTopicCounts(
  lost: readonly RecordPosition[],
  partitionCount: ((topic: string) => Promise<number>) | undefined,
): Promise<Map<string, number | undefined>> {
  const counts = new Map<string, number | undefined>();
  for (const topic of new Set(lost.map((p) => p.topic)))
    counts.set(topic, await partitionCount?.(topic).catch(() => undefined));
  return counts;
}

/**
 * What of a page goes again when an operator aborted some partitions' part of its committed transaction: its
 * records on those partitions (by their keys, as the producer partitions them), and its offset record. When a
 * partition count cannot be had (or a record has no key), the record goes again: repeated, never lost.
 */
export function lostPart(
  page: PageMessages,
  lost: readonly RecordPosition[],
  topics: SinkTopics,
  counts: ReadonlyMap<string, number | undefined>,
): PageMessages {
  return partOf(page, topics, (topic: string, key: Message['key']) => {
    if (!counts.has(topic)) return false; // every partition of that topic showed its part visible
    const count = counts.get(topic);
    if (count === undefined || key === null || key === undefined) return true;
    const partition = keyPartition(key, count);
    return lost.some((p) => p.topic === topic && p.partition === partition);
  });
}
