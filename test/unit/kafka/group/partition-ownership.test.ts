import kafkajs, { type PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  PartitionOwnership,
  STICKY_ASSIGNER,
  stickyAssigner,
} from '../../../../src/kafka/group/partition-ownership.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { ManualClock } from '../../../support/clock.js';

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

/** PartitionOwnership.join over a fake kafkajs consumer (the fields join and its listeners use). */
function joinWith(consumer: object, onAssignment: (assignment: unknown) => void = () => undefined) {
  return PartitionOwnership.join({
    kafka: { consumer: () => consumer } as unknown as Parameters<typeof PartitionOwnership.join>[0]['kafka'],
    connectorName: 'c',
    offsetsTopic: 'offsets',
    sessionTimeoutMs: 10_000,
    heartbeatIntervalMs: 3_000,
    rebalanceTimeoutMs: 60_000,
    onAssignment,
    onLost: () => undefined,
    logger: silentLogger(),
    clock: new ManualClock(),
  });
}

describe('PartitionOwnership.join', () => {
  it('starts when the first join failed and kafkajs restarts the consumer, and pauses it once it has joined', async () => {
    // kafkajs's run() resolves after a retriable failure of the first join with no group until its restart,
    // and pause() then throws this: the instance failed to start (CI, two instances starting together).
    let hasGroup = false;
    const handlers = new Map<string, (event: { payload: unknown }) => void>();
    const paused: unknown[] = [];
    const consumer = {
      events: {
        REBALANCING: 'rebalancing',
        GROUP_JOIN: 'group_join',
        HEARTBEAT: 'heartbeat',
        CRASH: 'crash',
      },
      on: (event: string, handler: (event: { payload: unknown }) => void) => {
        handlers.set(event, handler);
        return () => undefined;
      },
      connect: async () => undefined,
      subscribe: async () => undefined,
      run: async () => undefined,
      disconnect: async () => undefined,
      pause: (topics: unknown) => {
        if (!hasGroup)
          throw new kafkajs.KafkaJSNonRetriableError(
            'Consumer group was not initialized, consumer#run must be called first',
          );
        paused.push(topics);
      },
    };
    const assignments: unknown[] = [];
    const ownership = await joinWith(consumer, (assignment) => assignments.push(assignment));
    expect(ownership.assignment).toBeNull();

    // kafkajs starts again and joins: the join handler pauses the consumer and reports the assignment.
    hasGroup = true;
    handlers.get('group_join')?.({
      payload: { memberId: 'm1', memberAssignment: { offsets: [2, 0] }, duration: 5 },
    });
    expect(ownership.assignment?.partitions).toEqual([0, 2]);
    expect(assignments).toHaveLength(1);
    expect(paused).toEqual([[{ topic: 'offsets' }]]);
  });

  it('still fails on any other error of pause (a programmer error is not swallowed)', async () => {
    const consumer = {
      events: { REBALANCING: 'r', GROUP_JOIN: 'j', HEARTBEAT: 'h', CRASH: 'c' },
      on: () => () => undefined,
      connect: async () => undefined,
      subscribe: async () => undefined,
      run: async () => undefined,
      disconnect: async () => undefined,
      pause: () => {
        throw new TypeError('topics must be an array');
      },
    };
    await expect(joinWith(consumer)).rejects.toThrow(TypeError);
  });
});
