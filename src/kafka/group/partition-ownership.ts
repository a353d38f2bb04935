/**
 * Who owns which partitions of the offsets topic, in `connector.mode: distributed`: Kafka's own group
 * membership. Every instance of a connector joins the consumer group `<connector.name>-instances` (the presence
 * group `offsets reset` looks at, see instance-presence.ts) subscribed to the offsets topic, and the
 * partitions the group assigns it are the ones it owns: the locations whose offset keys hash there
 * (location-partition.ts), their offsets and their polling. No coordinator, lock or lease of our own.
 *
 * The consumer reads nothing: fetching is paused at once (it is there for membership; the owner reads a
 * partition it took over with a read_committed reader of its own, KafkaOffsetStore.loadPartitions). A paused
 * kafkajs consumer still heartbeats, every `maxWaitTimeInMs` at most.
 *
 * Rebalance protocol: kafkajs supports only eager rebalancing: on a rebalance every member rejoins and then
 * receives a whole new assignment (GROUP_JOIN carries it); kafkajs has no revocation callback that runs
 * before the rejoin, so an instance may still be committing a page of a partition that the group already
 * gave to another. That is safe because ownership is enforced by Kafka transactions, not by this module:
 * each partition has its own transactional id (`<transactionalIdFor(name)>-p<partition>`), and the new owner
 * initialises it BEFORE reading the partition. initTransactions fences the previous owner's producer (its
 * later sends and its commit fail) and completes or aborts its open transaction, so the new owner reads every
 * committed offset and nothing the old owner writes afterwards can become visible. A paused instance
 * ("zombie") that wakes after its session timeout is in the same position: its first commit fails fenced.
 * The sticky assigner (assignment.ts) only makes rebalances cheap: a partition stays where it is unless
 * balance moves it.
 *
 * Contract: `join()` once; `onAssignment` is called after every completed join with the whole new
 * assignment (the caller diffs it against what it holds, see runtime/partition-handover.ts), in order and
 * never concurrently with itself (the caller queues its work); `fresh` says this instance joined as a new
 * member (first join, or expelled after its session timeout): nothing it held before is still its own.
 * `onHeartbeat` after each successful heartbeat (the group is stable in the generation reported).
 * `leave()` at shutdown, after the work stopped.
 */
import kafkajs, { type Admin, type Consumer, type Kafka, type PartitionAssigner } from 'kafkajs';
import type { Logger } from '../../logging/logger.js';
import type { Clock } from '../../time/clock.js';
import { presenceGroupId, STICKY_ASSIGNER } from '../instance-presence.js';
import { stickyAssign } from './assignment.js';

// kafkajs is CommonJS and Node's ESM loader cannot see this export by name (only vitest's transform can).
const { AssignerProtocol } = kafkajs;

export { STICKY_ASSIGNER };

export interface Assignment {
  partitions: number[];
  /** The group generation, as the first heartbeat after the join confirms it; null until then. */
  generationId: number | null;
  /** This instance joined as a new member: whatever it held before is no longer its own. */
  fresh: boolean;
  /** When the rebalance began, as this instance saw it (epoch ms): a REBALANCING event or the join's start. */
  rebalanceStartedAt: number;
}

export interface PartitionOwnershipOptions {
  kafka: Kafka;
  connectorName: string;
  offsetsTopic: string;
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  rebalanceTimeoutMs: number;
  onAssignment: (assignment: Assignment) => void;
  onHeartbeat?: (generationId: number) => void;
  /** The membership ended for good (kafkajs gave up): the caller drops everything and fails. */
  onLost: (error: Error) => void;
  logger: Logger;
  clock: Clock;
}

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

/** kafkajs's refusal of pause() while its consumer has no group (between a crash and its restart). */
const NOT_RUNNING = 'Consumer group was not initialized';

/** Pauses fetching of the offsets topic, unless kafkajs is between a crash and its restart (see join). */
function pauseIfRunning(consumer: Pick<Consumer, 'pause'>, topic: string): void {
  try {
    consumer.pause([{ topic }]);
  } catch (error) {
    if (!(error instanceof Error && error.message.startsWith(NOT_RUNNING))) throw error;
  }
}

export class PartitionOwnership {
  private current: Assignment | null = null;
  private memberId: string | null = null;
  private rebalancingSince: number | null = null;
  private left = false;

  private constructor(
    private readonly consumer: Consumer,
    private readonly options: PartitionOwnershipOptions,
  ) {}

  static async join(options: PartitionOwnershipOptions): Promise<PartitionOwnership> {
    const owner: { current: PartitionOwnership | undefined } = { current: undefined };
    const consumer = options.kafka.consumer({
      groupId: presenceGroupId(options.connectorName),
      sessionTimeout: options.sessionTimeoutMs,
      heartbeatInterval: options.heartbeatIntervalMs,
      rebalanceTimeout: options.rebalanceTimeoutMs,
      // Paused: the fetch loop only sleeps this long between heartbeats.
      maxWaitTimeInMs: Math.max(100, Math.min(500, Math.floor(options.heartbeatIntervalMs / 3))),
      readUncommitted: false,
      allowAutoTopicCreation: false,
      partitionAssigners: [stickyAssigner(() => owner.current?.current?.partitions ?? [])],
    });
    const ownership = new PartitionOwnership(consumer, options);
    owner.current = ownership;
    ownership.listen();
    await consumer.connect();
    await consumer.subscribe({ topic: options.offsetsTopic, fromBeginning: false });
    // run() resolves once the first join ended. When that join failed with a retriable error (the group
    // rebalancing as other instances start, the coordinator loading), kafkajs has already disconnected the
    // group and set a timer to start again, and it refuses a pause until then: the GROUP_JOIN handler pauses
    // the consumer once it has joined, before any fetch. (Pausing here then threw, and the instance failed
    // to start: CI saw it once with two instances starting together.)
    await consumer.run({ autoCommit: false, eachBatch: async () => {} });
    pauseIfRunning(consumer, options.offsetsTopic);
    return ownership;
  }

  /** The latest assignment; null until the first join completed. */
  get assignment(): Assignment | null {
    return this.current;
  }

  /**
   * The partitions of the offsets topic some live member owns, as the group coordinator describes the group;
   * null while the group rebalances (eager: then nobody is sure of anything). For the unowned-locations gauge.
   */
  async ownedByGroup(admin: Pick<Admin, 'describeGroups'>): Promise<Set<number> | null> {
    const { groups } = await admin.describeGroups([presenceGroupId(this.options.connectorName)]);
    const group = groups[0];
    if (group === undefined || group.state !== 'Stable') return null;
    const owned = new Set<number>();
    for (const member of group.members) {
      const assignment = AssignerProtocol.MemberAssignment.decode(member.memberAssignment);
      for (const p of assignment?.assignment[this.options.offsetsTopic] ?? []) owned.add(p);
    }
    return owned;
  }

  async leave(): Promise<void> {
    this.left = true;
    await this.consumer.disconnect();
  }

  private listen(): void {
    const { consumer, options } = this;
    const { events } = consumer;
    consumer.on(events.REBALANCING, () => {
      this.rebalancingSince ??= options.clock.now();
    });
    consumer.on(events.GROUP_JOIN, ({ payload }) => {
      const now = options.clock.now();
      const partitions = [...(payload.memberAssignment[options.offsetsTopic] ?? [])].sort((a, b) => a - b);
      const fresh = this.memberId !== payload.memberId;
      this.memberId = payload.memberId;
      const joinStartedAt = now - payload.duration;
      const rebalanceStartedAt = Math.min(this.rebalancingSince ?? joinStartedAt, joinStartedAt);
      this.rebalancingSince = null;
      this.current = { partitions, generationId: null, fresh, rebalanceStartedAt };
      // A newly assigned partition comes paused too: this consumer never fetches.
      consumer.pause([{ topic: options.offsetsTopic }]);
      options.onAssignment(this.current);
    });
    consumer.on(events.HEARTBEAT, ({ payload }) => {
      if (this.current !== null) this.current.generationId = payload.groupGenerationId;
      options.onHeartbeat?.(payload.groupGenerationId);
    });
    consumer.on(events.CRASH, ({ payload }) => {
      if (payload.restart || this.left) return; // kafkajs rejoins by itself
      options.logger.error(
        { err: payload.error },
        'left the instances group for good (the group consumer crashed)',
      );
      options.onLost(payload.error);
    });
  }
}
