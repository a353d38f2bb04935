import { describe, expect, it } from 'vitest';
import {
  offsetsPartitionOf,
  ownershipProblems,
  type InstanceStatus,
} from '../../../tools/chaos/instances.js';

/** A /status as distributed mode answers it: the partitions assigned and the locations owned. */
function status(partitions: number[], locations: string[], generationId: number | null = 7): InstanceStatus {
  return {
    connector: { state: 'RUNNING' },
    assignment: { partitions, generationId },
    tasks: locations.map((id) => ({ id, state: 'RUNNING' })),
  };
}

// Locations a and b in partition 0, c in partition 2; partition 1 holds no configured location.
const partitionOf = new Map([
  ['a', 0],
  ['b', 0],
  ['c', 2],
]);

describe('the chaos ownership rule (distributed mode)', () => {
  it('holds when every partition with locations and every location has exactly one owner', () => {
    const views = new Map([
      ['connector-1', status([0, 1], ['a', 'b'])],
      ['connector-2', status([2], ['c'])],
      ['connector-3', status([], [])],
    ]);
    expect(ownershipProblems(views, partitionOf, ['connector-1', 'connector-2', 'connector-3'])).toEqual([]);
  });

  it('names a partition held twice and a location owned twice', () => {
    const views = new Map([
      ['connector-1', status([0], ['a', 'b'])],
      ['connector-2', status([0, 2], ['a', 'c'])],
    ]);
    expect(ownershipProblems(views, partitionOf, ['connector-1', 'connector-2'])).toEqual([
      'partition 0 held by 2 (connector-1, connector-2)',
      'location a owned by 2 (connector-1, connector-2)',
    ]);
  });

  it('names the partitions and locations of a paused instance nobody has taken over', () => {
    const views = new Map([['connector-1', status([0], ['a', 'b'])]]);
    expect(ownershipProblems(views, partitionOf, ['connector-1'])).toEqual([
      'partition 2 held by 0 ()',
      'location c owned by 0 ()',
    ]);
  });

  it('wants every expected instance to answer with an assignment of the same generation', () => {
    const views = new Map([
      ['connector-1', status([0, 2], ['a', 'b', 'c'], 8)],
      ['connector-2', status([], [], 7)],
      ['connector-3', status([], [], null)],
    ]);
    expect(
      ownershipProblems(views, partitionOf, ['connector-1', 'connector-2', 'connector-3', 'connector-4']),
    ).toEqual(['connector-3 has no assignment', 'connector-4 did not answer', 'generations differ: 8, 7']);
  });

  it('flags an instance answering that should not run, a location owned by one not holding its partition, and an unconfigured one', () => {
    const views = new Map([
      ['connector-1', status([0], ['a', 'b', 'c'])],
      ['connector-2', status([2], ['z'])],
    ]);
    expect(ownershipProblems(views, partitionOf, ['connector-1'])).toEqual([
      'connector-2 answers but is not expected to run',
      'location c owned by connector-1, which does not hold its partition 2',
      'location z is not configured',
    ]);
  });
});

describe("a location's partition of the offsets topic", () => {
  it("is Kafka's default partitioner on its key: stable, within the count, spread over the partitions", () => {
    const keys = Array.from({ length: 60 }, (_, i) => `chaos-x/location-${i}`);
    const partitions = keys.map((k) => offsetsPartitionOf(k, 6));
    expect(keys.map((k) => offsetsPartitionOf(k, 6))).toEqual(partitions);
    expect(partitions.every((p) => Number.isInteger(p) && p >= 0 && p < 6)).toBe(true);
    expect(new Set(partitions).size).toBe(6);
  });
});
