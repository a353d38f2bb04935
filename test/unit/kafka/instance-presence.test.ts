import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { InstancePresence, STICKY_ASSIGNER } from '../../../src/kafka/instance-presence.js';

/**
 * A kafkajs stand-in whose consumer never finishes joining its group (as when the group waits for the member of
 * a killed predecessor to expire), and whose admin describes the group with the given protocol and members.
 */
function kafkaWithPendingJoin(group: { protocol: string; members: number }) {
  const calls: string[] = [];
  const consumer = {
    events: { CRASH: 'consumer.crash' },
    on: () => () => {},
    connect: () => Promise.resolve(),
    subscribe: () => Promise.resolve(),
    run: () => {
      calls.push('run');
      return new Promise<void>(() => {});
    },
    disconnect: () => {
      calls.push('disconnect');
      return Promise.resolve();
    },
  };
  const admin = {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    describeGroups: () =>
      Promise.resolve({
        groups: [
          {
            protocol: group.protocol,
            members: Array.from({ length: group.members }, (_, i) => ({ memberId: `m${i}` })),
          },
        ],
      }),
  };
  const kafka = { consumer: () => consumer, admin: () => admin } as unknown as Kafka;
  return { kafka, calls };
}

describe('InstancePresence.join', () => {
  it('returns while the group join is still pending, so a restart after kill -9 does not wait for the old member to expire', async () => {
    const { kafka, calls } = kafkaWithPendingJoin({ protocol: 'RoundRobinAssigner', members: 1 });
    const refusals: Error[] = [];

    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', (error) => refusals.push(error));
    await presence.leave();

    expect(calls).toEqual(['run', 'disconnect']);
    expect(refusals).toEqual([]);
  });

  it('refuses at once a group already run by distributed-mode instances, before any page could be written', async () => {
    const { kafka } = kafkaWithPendingJoin({ protocol: STICKY_ASSIGNER, members: 2 });
    const refusals: Error[] = [];

    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', (error) => refusals.push(error));
    await presence.leave();

    expect(refusals.map((error) => error.message)).toEqual([
      `the group orders-instances is run by distributed-mode instances (protocol ${STICKY_ASSIGNER})`,
    ]);
  });

  it('starts when the group cannot be described (a coordinator still loading): the join refuses a mix later', async () => {
    const { kafka } = kafkaWithPendingJoin({ protocol: STICKY_ASSIGNER, members: 2 });
    const admin = kafka.admin();
    admin.describeGroups = () => Promise.reject(new Error('The coordinator is loading'));
    const refusals: Error[] = [];

    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', (error) => refusals.push(error));
    await presence.leave();

    expect(refusals).toEqual([]);
  });

  it('joins an empty group left by distributed instances without a refusal', async () => {
    const { kafka } = kafkaWithPendingJoin({ protocol: STICKY_ASSIGNER, members: 0 });
    const refusals: Error[] = [];

    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', (error) => refusals.push(error));
    await presence.leave();

    expect(refusals).toEqual([]);
  });
});
