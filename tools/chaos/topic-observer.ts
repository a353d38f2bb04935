/**
 * What the driver reads of the run's topics from outside, with kafkajs: their partitions, last stable offsets
 * and high watermarks (committed progress, an open transaction, tokens stored) and every location's stored
 * offset. It only decides what the driver does next; the checker's witness (witness.ts) judges the run.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { OffsetReading, OffsetView } from './fault-checks.js';
import { offsetsPartitionOf } from './instances.js';
import { lastStableOffsets } from './last-stable-offsets.js';
import { probeTopic } from './progress-probe.js';
import { CONNECTOR_NAME, offsetKey, TOPICS } from './run-names.js';

export class TopicObserver {
  private offsetPartitions: number[] = [];
  private callsPartitions: number[] = [];
  private partitionMap: Map<string, number> | null = null;

  constructor(private readonly brokers: string) {}

  async partitionsOf(topic: string): Promise<number[]> {
    const kafka = new Kafka({
      clientId: 'calls-chaos-driver',
      brokers: [this.brokers],
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      return (await admin.fetchTopicOffsets(topic)).map((p) => p.partition);
    } finally {
      await admin.disconnect();
    }
  }

  /** The sum of the offsets topic's last stable offsets: it grows with every committed page. */
  async committedTotal(): Promise<bigint> {
    if (this.offsetPartitions.length === 0) this.offsetPartitions = await this.partitionsOf(TOPICS.offsets);
    const offsets = await lastStableOffsets(this.brokers, TOPICS.offsets, this.offsetPartitions);
    return offsets.reduce((sum, p) => sum + p.lastStable, 0n);
  }

  /** After a kill -9 nothing writes: a last stable offset below the high watermark is an open transaction. */
  async openTransaction(): Promise<boolean> {
    for (const topic of [TOPICS.calls, TOPICS.offsets]) {
      const partitions = topic === TOPICS.offsets ? this.offsetPartitions : await this.partitionsOf(topic);
      const offsets = await lastStableOffsets(this.brokers, topic, partitions);
      if (offsets.some((p) => p.lastStable < p.high)) return true;
    }
    return false;
  }

  /** The broker shows a transaction open on the calls topic now (a kill may be aimed at it). */
  async transactionOpenNow(): Promise<boolean> {
    if (this.callsPartitions.length === 0) this.callsPartitions = await this.partitionsOf(TOPICS.calls);
    const offsets = await lastStableOffsets(this.brokers, TOPICS.calls, this.callsPartitions);
    return offsets.some((p) => p.lastStable < p.high);
  }

  /** Records written to the token topic (high watermarks): it grows when new tokens are stored. */
  async tokensWritten(): Promise<bigint> {
    const partitions = await this.partitionsOf(TOPICS.tokens);
    const offsets = await lastStableOffsets(this.brokers, TOPICS.tokens, partitions);
    return offsets.reduce((sum, p) => sum + p.high, 0n);
  }

  /** Every configured location's partition of the offsets topic (Kafka's default partitioner on its key). */
  async partitionOf(locations: readonly string[]): Promise<ReadonlyMap<string, number>> {
    if (this.partitionMap === null) {
      const count = (await this.partitionsOf(TOPICS.offsets)).length;
      this.partitionMap = new Map(
        locations.map((l) => [l, offsetsPartitionOf(offsetKey(l), count)] as const),
      );
    }
    return this.partitionMap;
  }

  /** Every location's stored offset, read from the offsets topic (read_committed). */
  async offsetReading(): Promise<OffsetReading> {
    const views = new Map<string, OffsetView>();
    const prefix = `${CONNECTOR_NAME}/`;
    await probeTopic(
      this.brokers,
      TOPICS.offsets,
      (m) => {
        const key = m.key?.toString() ?? '';
        if (!key.startsWith(prefix) || m.value === null) return;
        const value = JSON.parse(m.value.toString()) as {
          cursor?: string | null;
          watermark?: string | null;
          history?: unknown;
        };
        const location = key.slice(prefix.length);
        views.set(location, {
          records: (views.get(location)?.records ?? 0) + 1,
          watermark: value.watermark ?? null,
          cursor: value.cursor ?? null,
          history:
            value.history === undefined || value.history === null ? null : JSON.stringify(value.history),
        });
      },
      2000,
    );
    return views;
  }
}
