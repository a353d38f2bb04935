/**
 * The exactly-once sink's read-back of a commit of unknown outcome (kafka/sinks/commit-witnesses.ts
 * PublishedCheck): per record position, whether a read_committed reader sees it. Per topic, it first waits until
 * each record's transaction has ended on its partition (stable-offsets.ts awaitStableOffsets: past `timeoutMs`
 * the RetriableError KAFKA_TRANSACTION_OPEN naming the partition), then reads those records (topic-reader.ts
 * recordsVisible). A record below its partition's log start (retention removed it) is undefined: unknown.
 */
import type { Kafka } from 'kafkajs';
import type { Clock } from '../../time/clock.js';
import type { PublishedCheck, RecordPosition } from '../sinks/commit-witnesses.js';
import { awaitStableOffsets } from './stable-offsets.js';
import { recordsVisible } from './topic-reader.js';

export interface RecordsVisibilityOptions {
  /** Prefix of the throw-away reader groups: the offsets reader's, so the group ACLs its reads need cover them. */
  groupIdPrefix: string;
  /** How long a record's transaction may stay open, and a read take. */
  timeoutMs: number;
  clock?: Clock;
}

export function recordsVisibility(kafka: Kafka, options: RecordsVisibilityOptions): PublishedCheck {
  return {
    visible: async (positions: readonly RecordPosition[]) => {
      const answers = new Map<string, Map<number, boolean | undefined>>();
      for (const topic of new Set(positions.map((p) => p.topic))) {
        const offsets = new Map(
          positions.filter((p) => p.topic === topic).map((p) => [p.partition, BigInt(p.offset)]),
        );
        const targets = new Map([...offsets].map(([partition, offset]) => [partition, offset + 1n]));
        const ends = await awaitStableOffsets(kafka, { ...options, topic, targets });
        const gone = [...offsets]
          .filter(([p, offset]) => offset < (ends.get(p)?.start ?? 0n))
          .map(([p]) => p);
        for (const p of gone) offsets.delete(p);
        const read: Map<number, boolean | undefined> = await recordsVisible(kafka, {
          ...options,
          topic,
          offsets,
        });
        for (const p of gone) read.set(p, undefined);
        answers.set(topic, read);
      }
      return positions.map((p) => answers.get(p.topic)?.get(p.partition));
    },
  };
}
