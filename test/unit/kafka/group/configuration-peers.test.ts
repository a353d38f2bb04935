/**
 * The configurations group's assignor, and ConfigurationPeers over a fake group (no Kafka): the members'
 * metadata comes from each fake consumer's assignor as kafkajs would send it, DescribeGroups answers from the
 * members joined, and the test says when a join completes, when the group is stable and when a consumer crashes.
 */
import { EventEmitter } from 'node:events';
import type { Cluster, ConsumerConfig, Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  CONFIGURATION_ASSIGNER,
  ConfigurationPeers,
  configurationAssigner,
  configurationsGroupId,
} from '../../../../src/kafka/group/configuration-peers.js';
import {
  encodePeerMetadata,
  peerMetadataOf,
  type ConfigurationView,
} from '../../../../src/kafka/group/configuration-view.js';
import kafkajs from 'kafkajs';
import { settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { capturingLogger } from '../../../support/logger.js';

const { AssignerProtocol } = kafkajs;
const TOPIC = 'offsets';

class FakeMember {
  readonly events = { GROUP_JOIN: 'group_join', CRASH: 'crash' };
  readonly emitter = new EventEmitter();
  disconnected = false;
  paused = 0;
  constructor(
    readonly config: ConsumerConfig,
    readonly memberId: string,
  ) {}
  /** The protocol metadata the member joins with, as its assignor builds it. */
  metadata(): Buffer {
    const assigner = this.config.partitionAssigners![0]!({
      cluster: {} as never,
      groupId: 'g',
      logger: {} as never,
    });
    return assigner.protocol({ topics: [TOPIC] }).metadata;
  }
  on(event: string, listener: (e: { payload: unknown }) => void) {
    this.emitter.on(event, listener);
  }
  connect = () => Promise.resolve();
  subscribe = () => Promise.resolve();
  run = () => Promise.resolve();
  pause = () => void (this.paused += 1);
  disconnect = () => {
    this.disconnected = true;
    return Promise.resolve();
  };
  joined() {
    this.emitter.emit('group_join', { payload: { memberId: this.memberId, memberAssignment: {} } });
  }
  crashed(error: Error, restart: boolean) {
    this.emitter.emit('crash', { payload: { error, restart } });
  }
}

function group() {
  const members: FakeMember[] = [];
  /** Other instances' members: memberId -> metadata. */
  const others = new Map<string, Buffer>();
  let state = 'Stable';
  let describes = 0;
  const kafka = {
    consumer: (config: ConsumerConfig) => {
      const member = new FakeMember(config, `m${members.length + 1}`);
      members.push(member);
      return member;
    },
    admin: () => ({
      connect: () => Promise.resolve(),
      disconnect: () => Promise.resolve(),
      describeGroups: () => {
        describes += 1;
        const live = members.filter((m) => !m.disconnected);
        return Promise.resolve({
          groups: [
            {
              state,
              members: [
                ...live.map((m) => ({ memberId: m.memberId, memberMetadata: m.metadata() })),
                ...[...others].map(([memberId, memberMetadata]) => ({ memberId, memberMetadata })),
              ],
            },
          ],
        });
      },
    }),
  } as unknown as Kafka;
  return {
    kafka,
    members,
    current: () => members.at(-1)!,
    /** Another instance running `fingerprint` joins (its metadata as this version writes it). */
    other: (memberId: string, fingerprint: string) =>
      others.set(
        memberId,
        AssignerProtocol.MemberMetadata.encode({
          version: 0,
          topics: [TOPIC],
          userData: encodePeerMetadata({ fingerprint, instance: memberId }),
        }),
      ),
    setState: (next: string) => (state = next),
    describes: () => describes,
  };
}

function peers(fingerprint = 'f1') {
  const fake = group();
  const clock = new ManualClock(1_000_000);
  const log = capturingLogger();
  const views: ConfigurationView[] = [];
  const subject = new ConfigurationPeers(fake.kafka, {
    connectorName: 'orders',
    topic: TOPIC,
    fingerprint,
    instance: 'me',
    onView: (view) => views.push(view),
    clock,
    logger: log.logger,
    restartBackoff: { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0 },
  });
  return { fake, clock, log, views, subject, last: () => views.at(-1)! };
}

describe('ConfigurationPeers', () => {
  it('joins a group of its own that owns nothing, and reports the view of every member once a join is described', async () => {
    const { fake, subject, views, last } = peers();
    subject.start();
    expect(last().state).toBe('unknown');
    await settles(() => fake.members.length === 1, 'the member created');
    expect(fake.current().config).toMatchObject({ groupId: 'orders-configurations', sessionTimeout: 6_000 });
    fake.other('other-instance', 'f1');
    fake.current().joined();
    await settles(() => last().state === 'agreed', 'the view described');
    expect(last().peers).toEqual([{ fingerprint: 'f1', instances: ['me', 'other-instance'] }]);
    expect(fake.current().paused).toBe(1);
    expect(subject.current).toBe(views.at(-1));
    await subject.close();
    expect(fake.current().disconnected).toBe(true);
  });

  it('describes again while the group rebalances, and reports the view once it is stable with this member in it', async () => {
    const { fake, clock, subject, last } = peers();
    subject.start();
    await settles(() => fake.members.length === 1, 'the member created');
    fake.setState('PreparingRebalance');
    fake.current().joined();
    await clock.sleeping();
    expect(last().state).toBe('unknown');
    fake.other('other-instance', 'f2');
    fake.setState('Stable');
    clock.advance(500);
    await settles(() => last().state === 'differs', 'the view described');
    expect(last().peers.map((p) => p.fingerprint)).toEqual(['f1', 'f2']);
    await subject.close();
  });

  it('replaces its member when a reload changes the fingerprint, so that the group rebalances with the new one; the same fingerprint changes nothing', async () => {
    const { fake, subject, last, log } = peers();
    subject.start();
    await settles(() => fake.members.length === 1, 'the member created');
    fake.other('other-instance', 'f1');
    fake.current().joined();
    await settles(() => last().state === 'agreed', 'agreed');

    await subject.setFingerprint('f1');
    expect(fake.members).toHaveLength(1);

    await subject.setFingerprint('f2');
    expect(fake.members).toHaveLength(2);
    expect(fake.members[0]!.disconnected).toBe(true);
    expect(last()).toMatchObject({ state: 'unknown', fingerprint: 'f2' });
    fake.current().joined();
    await settles(() => last().state === 'differs', 'differs');
    expect(last().peers).toEqual([
      { fingerprint: 'f1', instances: ['other-instance'] },
      { fingerprint: 'f2', instances: ['me'] },
    ]);
    const warning = log.lines().find((l) => String(l.msg).includes('run different configurations'));
    expect(warning).toMatchObject({ level: 40 });
    expect(String(warning?.msg)).toContain('f2 (this instance) on 1: me');

    // The other instance reloads the same: its member is replaced too, and this one joins again.
    fake.other('other-instance', 'f2');
    fake.current().joined();
    await settles(() => last().state === 'agreed', 'agreed again');
    expect(
      log.lines().some((l) => l.level === 30 && String(l.msg).includes('run one configuration again')),
    ).toBe(true);
    await subject.close();
  });

  it('says unknown when its member crashes for good, never stops anything, and starts a new member after the backoff', async () => {
    const { fake, clock, subject, last, log } = peers();
    subject.start();
    await settles(() => fake.members.length === 1, 'the member created');
    fake.current().joined();
    await settles(() => last().state === 'agreed', 'agreed');
    fake.current().crashed(new Error('Not authorized to access group'), true);
    expect(last().state).toBe('agreed'); // kafkajs restarts from this one by itself
    fake.current().crashed(new Error('Not authorized to access group'), false);
    expect(last().state).toBe('unknown');
    expect(log.text()).toContain('configurations group: this instance cannot tell');
    await clock.sleepingFor(1_000);
    clock.advance(1_000);
    await settles(() => fake.members.length === 2, 'a new member');
    fake.current().joined();
    await settles(() => last().state === 'agreed', 'agreed again');
    await subject.close();
  });
});

describe('the configurations group assignor', () => {
  const assigner = configurationAssigner(() => encodePeerMetadata({ fingerprint: 'f1', instance: 'a' }))({
    cluster: {} as Cluster,
    groupId: 'orders-configurations',
    logger: {} as never,
  });

  it('puts the peer metadata in the member metadata, under a protocol name of its own', () => {
    const { name, metadata } = assigner.protocol({ topics: ['offsets'] });
    expect(name).toBe(CONFIGURATION_ASSIGNER);
    expect(peerMetadataOf(metadata)).toEqual({ fingerprint: 'f1', instance: 'a' });
  });

  it('assigns no partition to any member, so no member fetches', async () => {
    const members = ['m1', 'm2'].map((memberId) => ({
      memberId,
      memberMetadata: assigner.protocol({ topics: ['offsets'] }).metadata,
    }));
    const assignments = await assigner.assign({ members, topics: ['offsets'] });
    expect(assignments.map((a) => a.memberId)).toEqual(['m1', 'm2']);
    for (const { memberAssignment } of assignments)
      expect(AssignerProtocol.MemberAssignment.decode(memberAssignment)?.assignment).toEqual({});
  });

  it('is a group of its own beside the instances group', () => {
    expect(configurationsGroupId('orders')).toBe('orders-configurations');
  });
});
