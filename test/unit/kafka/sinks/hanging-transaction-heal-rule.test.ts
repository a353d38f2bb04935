/**
 * The exactly-once sink's heal of a hanging transaction of its own (KAFKA-20734): which stuck partitions are
 * provably its own commit's, and the transaction that ends them (a tombstone per partition, aborted).
 */
import type { ProducerBatch } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  abortThrough,
  HEAL_RECORD_KEY,
  healKey,
  partitionsToHeal,
  stuckPartitionsOf,
} from '../../../../src/kafka/sinks/hanging-transaction-heal-rule.js';
import type { TransactionalProducer } from '../../../../src/kafka/sinks/transactional-producer.js';

const ours = {
  writes: [
    [
      { topic: 'offsets', partition: 0, offset: '7' },
      { topic: 'offsets', partition: 1, offset: '11' },
      { topic: 'calls', partition: 0, offset: '15' },
    ],
  ],
  offsetsTopic: 'offsets',
};

describe('partitionsToHeal', () => {
  it('heals a partition stuck exactly where our commit of unknown outcome began on it', () => {
    const stuck = { topic: 'offsets', partitions: [0, 1], stableOffsets: ['7', '11'] };
    expect(partitionsToHeal(stuck, ours, new Set())).toEqual([
      { topic: 'offsets', partition: 0, offset: '7' },
      { topic: 'offsets', partition: 1, offset: '11' },
    ]);
  });

  it("leaves a partition stuck at another offset: the oldest open transaction there is not ours (a neighbour's)", () => {
    const stuck = { topic: 'offsets', partitions: [0, 1], stableOffsets: ['5', '11'] };
    expect(partitionsToHeal(stuck, ours, new Set())).toEqual([
      { topic: 'offsets', partition: 1, offset: '11' },
    ]);
  });

  it('leaves a partition of a topic or partition our commit did not write', () => {
    expect(
      partitionsToHeal({ topic: 'dlq', partitions: [0], stableOffsets: ['7'] }, ours, new Set()),
    ).toEqual([]);
    expect(
      partitionsToHeal({ topic: 'calls', partitions: [1], stableOffsets: ['15'] }, ours, new Set()),
    ).toEqual([]);
  });

  it('heals a partition at most once per stuck offset', () => {
    const stuck = { topic: 'calls', partitions: [0], stableOffsets: ['15'] };
    const healed = new Set([healKey({ topic: 'calls', partition: 0, offset: '15' })]);
    expect(partitionsToHeal(stuck, ours, healed)).toEqual([]);
  });

  it('heals nothing without a failed write of ours', () => {
    const none = { writes: [], offsetsTopic: 'offsets' };
    expect(
      partitionsToHeal({ topic: 'offsets', partitions: [0], stableOffsets: ['7'] }, none, new Set()),
    ).toEqual([]);
  });

  it('heals a partition of the offsets topic where a failed write of ours got no answer (the kill took it)', () => {
    const unanswered = {
      writes: [[{ topic: 'offsets', partition: 0, offset: '7' }]],
      offsetsTopic: 'offsets',
    };
    expect(
      partitionsToHeal({ topic: 'offsets', partitions: [1], stableOffsets: ['13'] }, unanswered, new Set()),
    ).toEqual([{ topic: 'offsets', partition: 1, offset: '13' }]);
    // Once per offset: still stuck there after the abort, it is another producer's.
    expect(
      partitionsToHeal(
        { topic: 'offsets', partitions: [1], stableOffsets: ['13'] },
        unanswered,
        new Set(['offsets/1@13']),
      ),
    ).toEqual([]);
    // Of another topic, an unanswered partition is not healed: its read-back asks only where sends answered.
    expect(
      partitionsToHeal({ topic: 'calls', partitions: [1], stableOffsets: ['13'] }, unanswered, new Set()),
    ).toEqual([]);
  });
});

describe('stuckPartitionsOf', () => {
  it("reads the partitions and stable offsets of a KAFKA_TRANSACTION_OPEN's details", () => {
    const details = { topic: 'calls', partitions: [0, 1], stableOffsets: ['3', '4'] };
    expect(stuckPartitionsOf(details)).toEqual(details);
  });

  it('reads nothing from details of another shape', () => {
    expect(stuckPartitionsOf({})).toBeUndefined();
    expect(stuckPartitionsOf({ topic: 'calls', partitions: [0], stableOffsets: [3] })).toBeUndefined();
    expect(stuckPartitionsOf({ topic: 'calls', partitions: [0, 1], stableOffsets: ['3'] })).toBeUndefined();
  });
});

describe('abortThrough', () => {
  function producer(failSend = false) {
    const sent: ProducerBatch[] = [];
    const ends: string[] = [];
    const p: TransactionalProducer = {
      connect: async () => undefined,
      disconnect: async () => undefined,
      transaction: async () => ({
        sendBatch: async (batch: ProducerBatch) => {
          if (failSend) throw new Error('NOT_LEADER_OR_FOLLOWER');
          sent.push(batch);
          return [];
        },
        commit: async () => void ends.push('commit'),
        abort: async () => void ends.push('abort'),
      }),
    };
    return { p, sent, ends };
  }

  it('writes one tombstone to each partition in a transaction of its own, and aborts it', async () => {
    const { p, sent, ends } = producer();
    await abortThrough(p, [
      { topic: 'offsets', partition: 0, offset: '7' },
      { topic: 'offsets', partition: 1, offset: '11' },
      { topic: 'calls', partition: 0, offset: '15' },
    ]);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.topicMessages).toEqual([
      {
        topic: 'offsets',
        messages: [
          { partition: 0, key: HEAL_RECORD_KEY, value: null },
          { partition: 1, key: HEAL_RECORD_KEY, value: null },
        ],
      },
      { topic: 'calls', messages: [{ partition: 0, key: HEAL_RECORD_KEY, value: null }] },
    ]);
    expect(ends).toEqual(['abort']);
  });

  it('aborts and rejects with Kafka’s error when the write fails, never commits', async () => {
    const { p, ends } = producer(true);
    await expect(abortThrough(p, [{ topic: 'calls', partition: 0, offset: '1' }])).rejects.toThrow(
      'NOT_LEADER_OR_FOLLOWER',
    );
    expect(ends).toEqual(['abort']);
  });
});
