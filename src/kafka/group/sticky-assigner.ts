/**
 * Distributed mode's assignor protocol for the instances group (kafka/group/instance-presence.ts): kafkajs's side of
 * stickyAssign (assignment.ts). Each member reports the partitions of the offsets topic it owns in its
 * subscription's user data; the group's leader decodes the claims and assigns the partitions.
 *
 * The protocol has its own name, so the broker refuses a group that mixes it with single mode's members (which
 * join with kafkajs's default protocol): instances of one connector must all run the same mode.
 */
import kafkajs, { type PartitionAssigner } from 'kafkajs';
import { stickyAssign } from './assignment.js';

// kafkajs is CommonJS and Node's ESM loader cannot see this export by name (only vitest's transform can).
const { AssignerProtocol } = kafkajs;

export const STICKY_ASSIGNER = 'CallsConnectorSticky';

interface StickyUserData {
  owned: number[];
}

function decodeClaim(userData: Buffer | null | undefined): number[] {
  if (userData === null || userData === undefined || userData.length === 0) return [];
  try {
    const parsed = JSON.parse(userData.toString('utf8')) as Partial<StickyUserData>;
    return Array.isArray(parsed.owned) ? parsed.owned.filter((p) => Number.isInteger(p)) : [];
  } catch {
    return []; // an unreadable claim is no claim: the partition is assigned by balance
  }
}

/** The partitions of `topic` a member's assignment (as DescribeGroups returns it) gives it. */
export function assignedPartitions(memberAssignment: Buffer, topic: string): number[] {
  return AssignerProtocol.MemberAssignment.decode(memberAssignment)?.assignment[topic] ?? [];
}

/**
 * kafkajs's side of stickyAssign: each member reports the partitions it owns in its subscription's user
 * data; the leader decodes the claims and assigns the offsets topic's partitions.
 */
export function stickyAssigner(owned: () => readonly number[]): PartitionAssigner {
  return ({ cluster }) => ({
    name: STICKY_ASSIGNER,
    version: 0,
    assign: async ({ members, topics }) => {
      const byMember = new Map<string, Record<string, number[]>>();
      for (const { memberId } of members) byMember.set(memberId, {});
      for (const topic of topics) {
        const partitions = cluster.findTopicPartitionMetadata(topic).map((m) => m.partitionId);
        const claims = members.map(({ memberId, memberMetadata }) => ({
          memberId,
          owned: decodeClaim(AssignerProtocol.MemberMetadata.decode(memberMetadata)?.userData),
        }));
        for (const [memberId, assigned] of stickyAssign(claims, partitions))
          byMember.get(memberId)![topic] = assigned;
      }
      return Promise.resolve(
        [...byMember].map(([memberId, assignment]) => ({
          memberId,
          memberAssignment: AssignerProtocol.MemberAssignment.encode({
            version: 0,
            assignment,
            userData: Buffer.alloc(0),
          }),
        })),
      );
    },
    protocol: ({ topics }) => ({
      name: STICKY_ASSIGNER,
      metadata: AssignerProtocol.MemberMetadata.encode({
        version: 0,
        topics,
        userData: Buffer.from(JSON.stringify({ owned: [...owned()] } satisfies StickyUserData)),
      }),
    }),
  });
}
