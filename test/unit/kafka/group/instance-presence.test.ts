import kafkajs, { type ConsumerConfig, type Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  InstancePresence,
  PRESENCE_MAX_WAIT_MS,
  STICKY_ASSIGNER,
} from '../../../../src/kafka/group/instance-presence.js';
import { startStampOf } from '../../../../src/kafka/group/start-stamp.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { ManualClock } from '../../../support/clock.js';

const { AssignerProtocol } = kafkajs;

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

/**
 * A kafkajs stand-in whose consumer never finishes joining and whose group is empty: it keeps the consumer's
 * configuration and its event listeners, for tests of how the presence joins and reacts to consumer events.
 */
function idleKafka() {
  const listeners = new Map<string, Array<(event: { payload: unknown }) => void>>();
  let config: ConsumerConfig | undefined;
  const paused: unknown[] = [];
  const consumer = {
    events: { CRASH: 'consumer.crash', GROUP_JOIN: 'consumer.group_join' },
    on: (event: string, listener: (event: { payload: unknown }) => void) => {
      listeners.set(event, [...(listeners.get(event) ?? []), listener]);
      return () => {};
    },
    pause: (topics: unknown) => paused.push(topics),
    connect: () => Promise.resolve(),
    subscribe: () => Promise.resolve(),
    run: () => new Promise<void>(() => {}),
    disconnect: () => Promise.resolve(),
  };
  const admin = {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    describeGroups: () => Promise.resolve({ groups: [] }),
  };
  const kafka = {
    consumer: (c: ConsumerConfig) => ((config = c), consumer),
    admin: () => admin,
  } as unknown as Kafka;
  const emit = (event: string, payload: unknown) => {
    for (const listener of listeners.get(event) ?? []) listener({ payload });
  };
  return { kafka, emit, config: () => config, paused };
}

describe('InstancePresence.join', () => {
  it('returns while the group join is still pending, so a restart after kill -9 does not wait for the old member to expire', async () => {
    const { kafka, calls } = kafkaWithPendingJoin({ protocol: 'RoundRobinAssigner', members: 1 });
    const refusals: Error[] = [];

    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', {
      onLost: (error) => refusals.push(error),
    });
    await presence.leave();

    expect(calls).toEqual(['run', 'disconnect']);
    expect(refusals).toEqual([]);
  });

  it('refuses at once a group already run by distributed-mode instances, before any page could be written', async () => {
    const { kafka } = kafkaWithPendingJoin({ protocol: STICKY_ASSIGNER, members: 2 });
    const refusals: Error[] = [];

    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', {
      onLost: (error) => refusals.push(error),
    });
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

    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', {
      onLost: (error) => refusals.push(error),
    });
    await presence.leave();

    expect(refusals).toEqual([]);
  });

  it('no longer waits to tell whether it is the newest once the membership was refused', async () => {
    const { kafka } = kafkaWithPendingJoin({ protocol: STICKY_ASSIGNER, members: 2 });
    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', { onLost: () => undefined });

    await expect(presence.newest('first')).rejects.toThrow(
      /no longer a member of the group orders-instances/,
    );
    await presence.leave();
  });

  it('ends the membership (onLost) when its consumer crashed and kafkajs does not restart it', async () => {
    // Seen at trace level: a log line kafkajs could not write crashed the consumer, which was never restarted,
    // and the instance stayed out of the group without a word.
    const { kafka, emit } = idleKafka();
    const lost: Error[] = [];
    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', {
      onLost: (error) => lost.push(error),
      logger: silentLogger(),
    });

    emit('consumer.crash', { error: new Error('the coordinator moved'), restart: true });
    expect(lost).toEqual([]);
    const forGood = new TypeError('a bug');
    emit('consumer.crash', { error: forGood, restart: false });
    expect(lost).toEqual([forGood]);
    await presence.leave();
  });

  it('counts completed joins, and wakes who waits for one after the joins it saw (a standby watching the group)', async () => {
    const { kafka, emit } = idleKafka();
    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', { logger: silentLogger() });
    const join = (memberId: string) => emit('consumer.group_join', { memberId, memberAssignment: {} });
    join('m-1');
    expect(presence.joins).toBe(1);
    await presence.rejoined(0, new AbortController().signal); // one already seen since 0: at once

    let woken = false;
    const waiting = presence.rejoined(1, new AbortController().signal).then(() => (woken = true));
    await Promise.resolve();
    expect(woken).toBe(false);
    join('m-1'); // the group rebalanced: another instance left
    await waiting;
    expect(presence.joins).toBe(2);

    const stop = new AbortController();
    const aborted = presence.rejoined(2, stop.signal);
    stop.abort(new Error('stopping'));
    await expect(aborted).rejects.toThrow('stopping');
    await presence.leave();
  });

  it('pauses its fetching of the offsets topic at every join, so an idle single-mode instance sends no fetch requests', async () => {
    const { kafka, emit, paused } = idleKafka();
    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', { logger: silentLogger() });
    expect(paused).toEqual([]);

    emit('consumer.group_join', { memberId: 'm-1', memberAssignment: { offsets: [0, 1, 2] } });
    expect(paused).toEqual([[{ topic: 'offsets' }]]);
    // A rebalance, or kafkajs's restart after a crash (a new consumer group, unpaused): paused again.
    emit('consumer.group_join', { memberId: 'm-2', memberAssignment: { offsets: [0, 1, 2] } });
    expect(paused).toEqual([[{ topic: 'offsets' }], [{ topic: 'offsets' }]]);
    await presence.leave();
  });

  it('joins an empty group left by distributed instances without a refusal', async () => {
    const { kafka } = kafkaWithPendingJoin({ protocol: STICKY_ASSIGNER, members: 0 });
    const refusals: Error[] = [];

    const presence = await InstancePresence.join(kafka, 'orders', 'offsets', {
      onLost: (error) => refusals.push(error),
    });
    await presence.leave();

    expect(refusals).toEqual([]);
  });
});

/** A kafkajs stand-in whose consumer joins as `me` when `join()` is called, and whose group reads as scripted. */
/** A member of the described group: its id, and the start stamp its metadata carries (none: an earlier version). */
type DescribedMember = string | { id: string; startedAt: number };

function memberDescription(member: DescribedMember) {
  if (typeof member === 'string') return { memberId: member, memberMetadata: Buffer.alloc(0) };
  const metadata = AssignerProtocol.MemberMetadata.encode({
    version: 0,
    topics: ['offsets'],
    userData: Buffer.from(JSON.stringify({ startedAt: member.startedAt })),
  });
  return { memberId: member.id, memberMetadata: metadata };
}

function kafkaWithGroup(states: Array<{ state: string; members: DescribedMember[] }>) {
  let onJoin: ((event: { payload: { memberId: string } }) => void) | undefined;
  const consumer = {
    events: { CRASH: 'consumer.crash', GROUP_JOIN: 'consumer.group_join' },
    on: (event: string, listener: (event: { payload: { memberId: string } }) => void) => {
      if (event === 'consumer.group_join') onJoin = listener;
      return () => {};
    },
    pause: () => undefined,
    connect: () => Promise.resolve(),
    subscribe: () => Promise.resolve(),
    run: () => new Promise<void>(() => {}),
    disconnect: () => Promise.resolve(),
  };
  let reads = 0;
  const admin = {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    describeGroups: () => {
      const current = states[Math.min(reads, states.length - 1)] ?? { state: 'Empty', members: [] };
      reads += 1;
      return Promise.resolve({
        groups: [
          {
            protocol: 'RoundRobinAssigner',
            state: current.state,
            members: current.members.map(memberDescription),
          },
        ],
      });
    },
  };
  const kafka = { consumer: () => consumer, admin: () => admin } as unknown as Kafka;
  return { kafka, join: (memberId: string) => onJoin?.({ payload: { memberId } }), reads: () => reads };
}

const instantClock = { now: () => 0, random: () => 0, sleep: () => Promise.resolve() };

describe('InstancePresence.newest', () => {
  it('answers true when every other member of the stable group started before this instance, false when one started later', async () => {
    const alone = kafkaWithGroup([{ state: 'Stable', members: [{ id: 'me', startedAt: 5 }] }]);
    const only = await InstancePresence.join(alone.kafka, 'orders', 'offsets', { clock: instantClock });
    alone.join('me');
    expect(await only.newest('again')).toBe(true);

    const older = [{ id: 'me', startedAt: 5 }, { id: 'before', startedAt: 4 }, 'earlier-version'];
    const afterOthers = kafkaWithGroup([{ state: 'Stable', members: older }]);
    const newest = await InstancePresence.join(afterOthers.kafka, 'orders', 'offsets', {
      clock: instantClock,
    });
    afterOthers.join('me');
    expect(await newest.newest('first')).toBe(true);
    // An earlier version's member (no stamp) keeps its own rule: it holds the id against a re-initialisation.
    expect(await newest.newest('again')).toBe(false);

    const later = kafkaWithGroup([
      {
        state: 'Stable',
        members: [
          { id: 'me', startedAt: 5 },
          { id: 'replacement', startedAt: 9 },
        ],
      },
    ]);
    const paused = await InstancePresence.join(later.kafka, 'orders', 'offsets', { clock: instantClock });
    later.join('me');
    expect(await paused.newest('first')).toBe(false);
  });

  it('waits while the group rebalances or this instance has not rejoined yet, then decides', async () => {
    const newer = { id: 'newer', startedAt: 9 };
    const group = kafkaWithGroup([
      { state: 'PreparingRebalance', members: [{ id: 'old-me', startedAt: 5 }, newer] },
      { state: 'Stable', members: [newer] },
      { state: 'Stable', members: [{ id: 'me', startedAt: 5 }, newer] },
    ]);
    const presence = await InstancePresence.join(group.kafka, 'orders', 'offsets', { clock: instantClock });
    group.join('me');
    expect(await presence.newest('again')).toBe(false);
    expect(group.reads()).toBeGreaterThanOrEqual(3);
  });

  it('cannot tell (rejects) when the group never settles with this instance in it', async () => {
    const group = kafkaWithGroup([{ state: 'PreparingRebalance', members: [] }]);
    let now = 0;
    const clock = {
      now: () => now,
      random: () => 0,
      sleep: (ms: number) => Promise.resolve(void (now += ms)),
    };
    const presence = await InstancePresence.join(group.kafka, 'orders', 'offsets', { clock: clock });
    await expect(presence.newest('first', 5_000)).rejects.toThrow(/did not settle/);
  });

  it('joins with a stamp of when its start began, under the round-robin protocol name earlier versions use', async () => {
    const { kafka, config } = idleKafka();
    await InstancePresence.join(kafka, 'orders', 'offsets', { clock: instantClock, startedAt: 1234 });

    const assigner = config()?.partitionAssigners?.[0]?.({
      cluster: {} as never,
      groupId: 'orders-instances',
      logger: {} as never,
    });
    const protocol = assigner?.protocol({ topics: ['offsets'] });
    expect(protocol?.name).toBe('RoundRobinAssigner');
    expect(startStampOf(protocol?.metadata)).toBe(1234);
  });

  it('fetches with a short wait, so that leaving at a stop does not wait out kafkajs’s 5 s long poll', async () => {
    // Every single-mode stop took 5 s more than its work: the leave waited for the presence consumer's fetch.
    const { kafka, config } = idleKafka();
    await InstancePresence.join(kafka, 'orders', 'offsets', { clock: instantClock });

    expect(config()?.maxWaitTimeInMs).toBe(PRESENCE_MAX_WAIT_MS);
    expect(PRESENCE_MAX_WAIT_MS).toBeLessThanOrEqual(500);
  });
});

/** A distributed-mode join over a fake kafkajs consumer (the fields join and its listeners use). */
function joinWith(consumer: object, onAssignment: (assignment: unknown) => void = () => undefined) {
  return InstancePresence.join({ consumer: () => consumer } as unknown as Kafka, 'c', 'offsets', {
    onLost: () => undefined,
    logger: silentLogger(),
    clock: new ManualClock(),
    assigned: {
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 3_000,
      rebalanceTimeoutMs: 60_000,
      onAssignment,
    },
  });
}

describe('InstancePresence.join in distributed mode', () => {
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
