import kafkajs, { type PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { STICKY_ASSIGNER, stickyAssigner } from '../../../../src/kafka/group/sticky-assigner.js';

const { AssignerProtocol } = kafkajs;

function cluster(partitions: number) {
  const metadata: PartitionMetadata[] = Array.from({ length: partitions }, (_, partitionId) => ({
    partitionId,
    leader: 1,
    partitionErrorCode: 0,
    replicas: [1],
    isr: [1],
  }));
  return { findTopicPartitionMetadata: () => metadata };
}

/** The assigner as kafkajs builds it (only `cluster` is used). */
function build(owned: number[], partitions = 6) {
  const factory = stickyAssigner(() => owned);
  return factory({ cluster: cluster(partitions), groupId: 'g', logger: {} } as unknown as Parameters<
    typeof factory
  >[0]);
}

describe('stickyAssigner', () => {
  it('reports the partitions the member owns in its subscription, under its own protocol name', () => {
    const { name, metadata } = build([4, 1]).protocol({ topics: ['offsets'] });
    expect(name).toBe(STICKY_ASSIGNER);
    const decoded = AssignerProtocol.MemberMetadata.decode(metadata);
    expect(decoded?.topics).toEqual(['offsets']);
    expect(JSON.parse(decoded?.userData.toString('utf8') ?? '')).toEqual({ owned: [4, 1] });
  });

  it('keeps each member claimed partitions as the leader, and gives the newcomer its share', async () => {
    const member = (memberId: string, owned: number[]) => ({
      memberId,
      memberMetadata: build(owned).protocol({ topics: ['offsets'] }).metadata,
    });
    const assignment = await build([]).assign({
      members: [member('old', [0, 1, 2, 3, 4, 5]), member('new', [])],
      topics: ['offsets'],
    });
    const decoded = Object.fromEntries(
      assignment.map(({ memberId, memberAssignment }) => [
        memberId,
        AssignerProtocol.MemberAssignment.decode(memberAssignment)?.assignment.offsets,
      ]),
    );
    expect(decoded).toEqual({ old: [0, 1, 2], new: [3, 4, 5] });
  });

  it('takes an unreadable claim for no claim', async () => {
    const garbled = AssignerProtocol.MemberMetadata.encode({
      version: 0,
      topics: ['offsets'],
      userData: Buffer.from('not json'),
    });
    const assignment = await build([]).assign({
      members: [{ memberId: 'a', memberMetadata: garbled }],
      topics: ['offsets'],
    });
    expect(
      AssignerProtocol.MemberAssignment.decode(assignment[0]!.memberAssignment)?.assignment.offsets,
    ).toEqual([0, 1, 2, 3, 4, 5]);
  });
});
