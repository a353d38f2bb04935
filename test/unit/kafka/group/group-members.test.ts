import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  presenceGroupId,
  runByDistributedInstances,
  runningInstances,
} from '../../../../src/kafka/group/group-members.js';
import { STICKY_ASSIGNER } from '../../../../src/kafka/group/sticky-assigner.js';

interface DescribedGroup {
  protocol: string;
  members: { memberId: string; clientId: string; clientHost: string }[];
}

/** A kafkajs stand-in whose admin describes the groups it is asked for (or fails), recording the ids asked. */
function kafkaDescribing(group: DescribedGroup | undefined | Error) {
  const asked: string[][] = [];
  let disconnected = 0;
  const admin = {
    connect: () => Promise.resolve(),
    disconnect: () => {
      disconnected += 1;
      return Promise.resolve();
    },
    describeGroups: (ids: string[]) => {
      asked.push(ids);
      if (group instanceof Error) return Promise.reject(group);
      return Promise.resolve({ groups: group === undefined ? [] : [group] });
    },
  };
  const kafka = { admin: () => admin } as unknown as Kafka;
  return { kafka, asked, disconnected: () => disconnected };
}

const member = { memberId: 'm1', clientId: 'calls-connector', clientHost: '/10.0.0.7' };

describe('presenceGroupId', () => {
  it("is the connector's name followed by -instances", () => {
    expect(presenceGroupId('calls')).toBe('calls-instances');
  });
});

describe('runningInstances', () => {
  it("lists the members of the connector's instances group, then disconnects", async () => {
    const { kafka, asked, disconnected } = kafkaDescribing({
      protocol: 'RoundRobinAssigner',
      members: [member],
    });
    await expect(runningInstances(kafka, 'calls')).resolves.toEqual([member]);
    expect(asked).toEqual([['calls-instances']]);
    expect(disconnected()).toBe(1);
  });

  it('is empty when the group was never described', async () => {
    await expect(runningInstances(kafkaDescribing(undefined).kafka, 'calls')).resolves.toEqual([]);
  });
});

describe('runByDistributedInstances', () => {
  it("is true when the group has members and the sticky assigner's protocol", async () => {
    const { kafka } = kafkaDescribing({ protocol: STICKY_ASSIGNER, members: [member] });
    await expect(runByDistributedInstances(kafka, 'calls')).resolves.toBe(true);
  });

  it('is false for a group of single-mode members, and for one without members', async () => {
    const single = kafkaDescribing({ protocol: 'RoundRobinAssigner', members: [member] });
    const empty = kafkaDescribing({ protocol: STICKY_ASSIGNER, members: [] });
    await expect(runByDistributedInstances(single.kafka, 'calls')).resolves.toBe(false);
    await expect(runByDistributedInstances(empty.kafka, 'calls')).resolves.toBe(false);
  });

  it('is false, after disconnecting, when the group cannot be described', async () => {
    const { kafka, disconnected } = kafkaDescribing(new Error('COORDINATOR_LOAD_IN_PROGRESS'));
    await expect(runByDistributedInstances(kafka, 'calls')).resolves.toBe(false);
    expect(disconnected()).toBe(1);
  });
});
