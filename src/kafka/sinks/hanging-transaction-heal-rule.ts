/**
 * The exactly-once sink heals a hanging transaction of its own (docs/kafka-hanging-transaction.md, "What a client
 * can do"): Kafka 4.x's restarted coordinator can complete a commit without writing its markers on partitions that
 * had no leader yet (KAFKA-20734), and those partitions then keep our records open for ever (their last stable
 * offset stuck, KAFKA_TRANSACTION_OPEN). Only a marker of the same producer id ends them, and the operator's
 * `kafka-transactions.sh abort` needs ClusterAction. But a partition's producer state ends the open transaction of
 * a producer id at the next marker of that producer id on the partition, whatever epoch began it
 * (ProducerAppendInfo.appendEndTxnMarker). Our producer (the same transactional id, so the same producer id under a
 * bumped epoch) can write that marker itself: a transaction that writes one record to each hanging partition and
 * is ABORTED. The abort marker aborts the hanging records with it; the sink's read-back then finds what Kafka lost
 * of the committed transaction and writes it again (settlement.ts), exactly as after the operator's abort.
 *
 * Abort, not commit: a commit marker would make the hanging records visible, right only if the coordinator
 * committed that transaction; when it was aborting (PrepareAbort loses markers the same way) a commit would
 * publish part of an aborted page. An abort is right either way, since the read-back writes again whatever of a
 * committed page it took. The record written is a tombstone (null value) under a key naming the heal: aborted, no
 * read_committed reader ever sees it, and compaction drops it.
 *
 * Ours: the sink knows where each of its failed writes began on each partition a send answered (Witnesses.firsts,
 * from the produce answers; the last few writes are kept, as a page refused after a failed send reads back later). A partition's last stable offset is the first offset of the oldest transaction open there, so a
 * partition stuck exactly at the offset where our write began holds OUR transaction open: proven. One more case is
 * healed without that proof: a partition of the offsets topic that the read-back of the write's own locations found
 * stuck while a failed write's sends did not answer for it (the kill took the answer; the record may be there). Our
 * write may have sent records there, and an abort marker of our producer id cannot end another producer's transaction (the marker is
 * per producer id): at worst it aborts nothing but its own tombstone, the partition stays stuck, and the sink says
 * it is not its own (healed once per offset). Any other stuck partition (a neighbour's transaction, or ours from
 * before a restart, which this process cannot tell) is left to its transaction timeout or to the operator.
 */
import type { Message } from 'kafkajs';
import type { RecordPosition } from './commit-witnesses.js';
import type { TransactionalProducer } from './transactional-producer.js';

/** The log code of a heal, for alerts and the runbook. */
export const TRANSACTION_HEALED = 'KAFKA_TRANSACTION_HEALED';

/** The key of the record a heal writes (and aborts): says what it was, should a read_uncommitted reader see it. */
export const HEAL_RECORD_KEY = 'calls-connector.hanging-transaction-heal';

/** The partitions a KAFKA_TRANSACTION_OPEN names (its details), with the offsets their LSO is stuck at. */
export interface StuckPartitions {
  topic: string;
  partitions: readonly number[];
  stableOffsets: readonly string[];
}

/** Reads StuckPartitions from a KAFKA_TRANSACTION_OPEN's details; undefined when they are not of that shape. */
export function stuckPartitionsOf(details: Readonly<Record<string, unknown>>): StuckPartitions | undefined {
  const { topic, partitions, stableOffsets } = details;
  if (typeof topic !== 'string' || !isArrayOf(partitions, 'number') || !isArrayOf(stableOffsets, 'string'))
    return undefined;
  if (partitions.length !== stableOffsets.length) return undefined;
  return { topic, partitions, stableOffsets };
}

function isArrayOf<T extends 'number' | 'string'>(
  value: unknown,
  type: T,
): value is Array<T extends 'number' ? number : string> {
  return Array.isArray(value) && (value as unknown[]).every((v) => typeof v === type);
}

/** The key a heal is remembered by: one partition at one stuck offset. */
export function healKey(position: RecordPosition): string {
  return `${position.topic}/${position.partition}@${position.offset}`;
}

/**
 * What the sink knows of its failed writes that sent records (their transactions ended on the coordinator since,
 * by the producer initialised after each): per write, where its answered sends began (`firsts`).
 */
export interface OwnWrites {
  writes: ReadonlyArray<readonly RecordPosition[]>;
  offsetsTopic: string;
}

/**
 * Which stuck partitions to heal (see the module comment): those stuck exactly where one of our failed writes
 * began there, and those of the offsets topic where a failed write's sends did not answer; never one healed already
 * at that offset (`healed`, keys of healKey). Pure.
 */
export function partitionsToHeal(
  stuck: StuckPartitions,
  own: OwnWrites,
  healed: ReadonlySet<string>,
): RecordPosition[] {
  const on = (firsts: readonly RecordPosition[], partition: number): RecordPosition | undefined =>
    firsts.find((o) => o.topic === stuck.topic && o.partition === partition);
  return stuck.partitions
    .map((partition, i) => ({ topic: stuck.topic, partition, offset: stuck.stableOffsets[i] ?? '' }))
    .filter((p) =>
      own.writes.some((firsts) => {
        const first = on(firsts, p.partition);
        return first === undefined ? p.topic === own.offsetsTopic : first.offset === p.offset;
      }),
    )
    .filter((p) => !healed.has(healKey(p)));
}

/**
 * Writes one tombstone to each of `positions`' partitions in a transaction of `producer` and aborts it: the abort
 * marker of our producer id ends our hanging transaction there (see the module comment). Rejects with Kafka's
 * error when the write or the abort fails (the caller tries again at its next read-back).
 */
export async function abortThrough(
  producer: TransactionalProducer,
  positions: readonly RecordPosition[],
): Promise<void> {
  const transaction = await producer.transaction();
  const byTopic = new Map<string, Message[]>();
  for (const p of positions)
    byTopic.set(p.topic, [
      ...(byTopic.get(p.topic) ?? []),
      { partition: p.partition, key: HEAL_RECORD_KEY, value: null },
    ]);
  try {
    await transaction.sendBatch({
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      acks: -1,
    });
  } catch (error) {
    await transaction.abort().catch(() => undefined);
    throw error;
  }
  await transaction.abort();
}
