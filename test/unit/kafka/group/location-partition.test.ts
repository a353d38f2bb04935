import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { locationPartition, locationsByPartition } from '../../../../src/kafka/group/location-partition.js';
import { offsetKey } from '../../../../src/kafka/offsets/offset-codec.js';

const uids = Array.from({ length: 300 }, (_, i) => `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`);

/** Where a producer with the DefaultPartitioner (the sinks') writes a key among `count` partitions. */
function producerPartition(key: string, count: number): number {
  const partitionMetadata: PartitionMetadata[] = Array.from({ length: count }, (_, partitionId) => ({
    partitionId,
    leader: 1,
    partitionErrorCode: 0,
    replicas: [1],
    isr: [1],
  }));
  return Partitioners.DefaultPartitioner()({ topic: 't', partitionMetadata, message: { key, value: null } });
}

describe('locationPartition', () => {
  // test/integration/kafka/group/partitioning.test.ts shows the DefaultPartitioner agrees with the Java client.
  it('is the partition the sinks write the location offset key to', () => {
    for (const count of [1, 2, 7, 24])
      for (const uid of uids)
        expect(locationPartition('conn', uid, count)).toBe(producerPartition(offsetKey('conn', uid), count));
  });

  it('spreads many locations over every partition', () => {
    const grouped = locationsByPartition('conn', uids, 24);
    expect([...grouped.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 24 }, (_, p) => p));
    expect([...grouped.values()].flat().sort()).toEqual([...uids].sort());
  });

  it('depends on the connector name, which is part of the key', () => {
    const moved = uids.filter(
      (uid) => locationPartition('one', uid, 24) !== locationPartition('two', uid, 24),
    );
    expect(moved.length).toBeGreaterThan(200);
  });

  it('refuses a partition count that is not a positive integer', () => {
    expect(() => locationPartition('conn', 'a', 0)).toThrow(RangeError);
    expect(() => locationPartition('conn', 'a', 1.5)).toThrow(RangeError);
  });
});
