/**
 * Where a transaction's records landed (the witnesses read back after a commit of unknown outcome), and which of a
 * page's records go again when an operator aborted some partitions' part of its committed transaction.
 */
import { describe, expect, it } from 'vitest';
import { lostPart, lostTopicCounts, Witnesses } from '../../../../src/kafka/sinks/commit-witnesses.js';
import { keyPartition } from '../../../../src/kafka/group/location-partition.js';
import type { PageMessages } from '../../../../src/kafka/records/page-messages.js';

const topics = { calls: 'calls', offsets: 'offsets', deadLetters: 'dlq' };

function pageWith(keys: string[], deadLetterKey: string | null): PageMessages {
  return {
    locationUid: 'a',
    calls: keys.map((key) => ({ key, value: Buffer.from(key) })),
    deadLetters: [{ key: deadLetterKey, value: Buffer.from('{}') }],
    divertedCodes: ['ITEM_SCHEMA_REJECTED'],
    offset: { key: 'conn/a', value: '{}' },
    bytes: 1_000,
  };
}

describe('Witnesses', () => {
  it('keeps the first record each send placed on each partition outside the offsets topic', () => {
    const witnesses = new Witnesses('offsets');
    witnesses.add([
      { topicName: 'calls', partition: 0, errorCode: 0, baseOffset: '10' },
      { topicName: 'offsets', partition: 0, errorCode: 0, baseOffset: '3' },
      { topicName: 'calls', partition: 1, errorCode: 7, baseOffset: '4' },
    ]);
    witnesses.add([
      { topicName: 'calls', partition: 0, errorCode: 0, baseOffset: '12' },
      { topicName: 'dlq', partition: 2, errorCode: 0, baseOffset: '0' },
    ]);
    witnesses.add(undefined);
    expect(witnesses.positions()).toEqual([
      { topic: 'calls', partition: 0, offset: '10' },
      { topic: 'dlq', partition: 2, offset: '0' },
    ]);
    // Where the transaction began on every partition, the offsets topic's too (what proves a hanging one ours).
    expect(witnesses.firsts()).toEqual([
      { topic: 'calls', partition: 0, offset: '10' },
      { topic: 'offsets', partition: 0, offset: '3' },
      { topic: 'dlq', partition: 2, offset: '0' },
    ]);
  });
});

describe('lostPart', () => {
  const keys = Array.from({ length: 8 }, (_, i) => `uid-${i}`);

  it("sends again the page's records on the aborted partitions only, with its offset record", async () => {
    const lostPartition = keyPartition('uid-0', 2);
    const lost = [{ topic: 'calls', partition: lostPartition, offset: '5' }];
    const part = lostPart(pageWith(keys, 'dead'), lost, topics, await lostTopicCounts(lost, async () => 2));
    expect(part.calls.map((m) => m.key)).toEqual(keys.filter((k) => keyPartition(k, 2) === lostPartition));
    expect(part.calls.length).toBeLessThan(keys.length); // the visible partition's calls are not repeated
    expect(part.deadLetters).toEqual([]); // the dead-letter topic kept its part
    expect(part.offset).toEqual({ key: 'conn/a', value: '{}' });
    expect(part.divertedCodes).toEqual([]); // counted with the original commit
  });

  it('sends again every record of a topic whose partition count cannot be had, and a record without a key: repeated, never lost', async () => {
    const lost = [
      { topic: 'calls', partition: 0, offset: '5' },
      { topic: 'dlq', partition: 1, offset: '0' },
    ];
    const counts = await lostTopicCounts(lost, async (topic) => {
      if (topic === 'calls') throw new Error('metadata unavailable');
      return 3;
    });
    const part = lostPart(pageWith(keys, null), lost, topics, counts);
    expect(part.calls).toHaveLength(keys.length);
    expect(part.deadLetters).toHaveLength(1);
  });
});
