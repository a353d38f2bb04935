import type { Consumer } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import {
  NudgeTopicReader,
  START_OFFSETS_RETRY,
  type PartitionOffset,
} from '../../../../src/kafka/nudges/nudge-reader.js';
import { encodeNudge, encodeReplayKey, type NudgeMessage } from '../../../../src/kafka/nudges/nudge-topic.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { ReplayWindow } from '../../../../src/webhooks/replay-window.js';
import { idles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { FakeConsumer } from '../../../support/fake-consumer.js';

const TOPIC = 'offsets-nudges';
function reader(
  options: {
    start?: PartitionOffset[];
    connect?: (consumerNumber: number) => Promise<void>;
    /** Replaces the start offsets' answer: called once per asking, from 1, with the time asked about. */
    offsetsAt?: (asking: number, ms: number) => Promise<PartitionOffset[]>;
    /** The reader's keysFromMs (before its start at 900_000). */
    keysFromMs?: number;
    /** The replay window the shared keys go to (runtime/steps/webhooks.ts wires it so). */
    window?: ReplayWindow;
  } = {},
) {
  let askings = 0;
  const clock = new ManualClock(1_000_000);
  const consumers: FakeConsumer[] = [];
  const restarts: Array<() => boolean> = [];
  const read: NudgeMessage[] = [];
  const subject = new NudgeTopicReader({
    topic: TOPIC,
    consumer: (restartsNow) => {
      const consumer = new FakeConsumer(TOPIC);
      consumers.push(consumer);
      restarts.push(restartsNow);
      const number = consumers.length;
      if (options.connect !== undefined)
        consumer.connect = () => options.connect?.(number) ?? Promise.resolve();
      return consumer as unknown as Consumer;
    },
    offsetsAt: (ms) => {
      askings += 1;
      return options.offsetsAt?.(askings, ms) ?? Promise.resolve(options.start ?? []);
    },
    startAtMs: 900_000,
    ...(options.keysFromMs !== undefined && { keysFromMs: options.keysFromMs }),
    each: (nudge) => read.push(nudge),
    ...(options.window && {
      replayKeys: ({ key, atMs }: { key: string; atMs: number }) =>
        options.window?.recordShared(key, atMs, clock.now()),
    }),
    clock,
    logger: silentLogger(),
    restartBackoff: { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0 },
  });
  const current = (): FakeConsumer => {
    const last = consumers.at(-1);
    if (last === undefined) throw new Error('no consumer yet');
    return last;
  };
  return { subject, clock, consumers, restarts, read, current };
}

const nudge = (uid: string): NudgeMessage => ({ location: 'L1', uid, event: 'call.updated' });

/** A kafkajs protocol error as the consumer's crash carries it. */
function protocolError(type: string): Error {
  return Object.assign(new Error('Not authorized to access group'), { type, retriable: false });
}

describe('the nudge topic reader', () => {
  it('starts each partition at the first nudge written since the instance started', async () => {
    const r = reader({
      start: [
        { partition: 0, offset: '40' },
        { partition: 1, offset: '7' },
      ],
    });
    await r.subject.start();
    r.current().joined([0, 1]);
    expect(r.current().seeks).toEqual([
      { partition: 0, offset: '40' },
      { partition: 1, offset: '7' },
    ]);
  });

  it('asks the start offsets again while asking fails, so a partition it never read from still starts there', async () => {
    const r = reader({
      offsetsAt: (asking) =>
        asking < 3
          ? Promise.reject(
              Object.assign(new Error('There is no leader for this topic-partition'), { retriable: true }),
            )
          : Promise.resolve([
              { partition: 0, offset: '3' },
              { partition: 1, offset: '0' },
            ]),
    });
    const started = r.subject.start();
    await r.clock.sleeping();
    r.clock.advance(START_OFFSETS_RETRY.maxDelayMs);
    await r.clock.sleeping();
    r.clock.advance(START_OFFSETS_RETRY.maxDelayMs);
    await started;
    r.current().joined([0, 1]);
    expect(r.current().seeks).toEqual([
      { partition: 0, offset: '3' },
      { partition: 1, offset: '0' },
    ]);
  });

  it('enters the replay key each record shares into the replay window, once per key, before its nudge', async () => {
    const window = new ReplayWindow({ keepMs: 600_000, maxEntries: 100 });
    const r = reader({ start: [{ partition: 0, offset: '0' }], window });
    await r.subject.start();
    r.current().joined([0]);
    // Taken by another instance 2 s before this one reads it: a fan-out's two nudges carry one key.
    const taken = { key: 'id:msg_1', atMs: r.clock.now() - 2_000 };
    await r.current().deliver(0, '0', encodeNudge(nudge('a'), taken));
    await r.current().deliver(0, '1', encodeNudge({ ...nudge('a'), location: 'L2' }, taken));
    // A key of its own (a fan-out over several partitions), and a version 1 nudge without one.
    await r.current().deliver(0, '2', encodeReplayKey({ key: 'sig:b', atMs: r.clock.now() }));
    await r
      .current()
      .deliver(0, '3', Buffer.from('{"v":1,"location":"L1","uid":"c","event":"call.updated"}'));
    expect(r.read.map((n) => `${n.uid}@${n.location}`)).toEqual(['a@L1', 'a@L2', 'c@L1']);
    expect(window.size).toBe(2);
    expect(window.has('id:msg_1', r.clock.now())).toBe(true);
    expect(window.has('sig:b', r.clock.now())).toBe(true);
    // Kept from when the other instance verified it, not from the read.
    r.clock.advance(598_000);
    expect(window.has('id:msg_1', r.clock.now())).toBe(true);
    r.clock.advance(1);
    expect(window.has('id:msg_1', r.clock.now())).toBe(false);
    expect(window.has('sig:b', r.clock.now())).toBe(true);
    // Past its record, the reader resumes after the key record, which it handed on.
    r.current().seeks.length = 0;
    r.current().joined([0]);
    expect(r.current().seeks).toEqual([{ partition: 0, offset: '4' }]);
  });

  it('reads the replay keys written up to keysFromMs before its start, handing on no nudge written before it', async () => {
    const window = new ReplayWindow({ keepMs: 600_000, maxEntries: 100 });
    const r = reader({
      window,
      keysFromMs: 300_000,
      // The start (900 000) is at offset 10 of partition 0 and 3 of partition 1; keysFromMs at 4 and 0.
      offsetsAt: (_asking, ms) =>
        Promise.resolve(
          ms === 900_000
            ? [
                { partition: 0, offset: '10' },
                { partition: 1, offset: '3' },
              ]
            : [
                { partition: 0, offset: '4' },
                { partition: 1, offset: '0' },
              ],
        ),
    });
    await r.subject.start();
    r.current().joined([0, 1]);
    expect(r.current().seeks).toEqual([
      { partition: 0, offset: '4' },
      { partition: 1, offset: '0' },
    ]);
    const before = { key: 'id:before-start', atMs: r.clock.now() - 300_000 };
    await r.current().deliver(0, '9', encodeNudge(nudge('old'), before));
    await r.current().deliver(1, '2', encodeNudge(nudge('old-too')));
    await r.current().deliver(0, '10', encodeNudge(nudge('new'), { key: 'id:after', atMs: r.clock.now() }));
    expect(r.read.map((n) => n.uid)).toEqual(['new']);
    expect(window.has('id:before-start', r.clock.now())).toBe(true);
    expect(window.has('id:after', r.clock.now())).toBe(true);
  });

  it('reads from its start time when the offsets at keysFromMs cannot be had', async () => {
    const r = reader({
      keysFromMs: 300_000,
      offsetsAt: (_asking, ms) =>
        ms === 900_000
          ? Promise.resolve([{ partition: 0, offset: '10' }])
          : Promise.reject(new Error('not now')),
    });
    await r.subject.start();
    r.current().joined([0]);
    expect(r.current().seeks).toEqual([{ partition: 0, offset: '10' }]);
  });

  it('resumes every partition after the last nudge it handed on when it joins again', async () => {
    const r = reader({
      start: [
        { partition: 0, offset: '0' },
        { partition: 1, offset: '0' },
        { partition: 2, offset: '5' },
      ],
    });
    await r.subject.start();
    r.current().joined([0, 1, 2]);
    await r.current().deliver(0, '0', encodeNudge(nudge('a')));
    await r.current().deliver(0, '1', encodeNudge(nudge('b')));
    await r.current().deliver(1, '9', encodeNudge(nudge('c')));
    r.current().seeks.length = 0;
    // A coordinator move or a session expiry: the same consumer joins a new generation.
    r.current().joined([0, 1, 2]);
    expect(r.current().seeks).toEqual([
      { partition: 0, offset: '2' },
      { partition: 1, offset: '10' },
      { partition: 2, offset: '5' },
    ]);
    expect(r.read.map((n) => n.uid)).toEqual(['a', 'b', 'c']);
  });

  it('is not healthy after a crash kafkajs does not restart from, naming it, and runs again with a new consumer', async () => {
    const r = reader({ start: [{ partition: 0, offset: '3' }] });
    await r.subject.start();
    r.current().joined([0]);
    await r.current().deliver(0, '3', encodeNudge(nudge('a')));
    expect(r.subject.health()).toEqual({ ok: true });

    r.current().crashed(protocolError('GROUP_AUTHORIZATION_FAILED'), false);
    const health = r.subject.health();
    expect(health.ok).toBe(false);
    expect(health.detail).toMatch(
      /^NUDGE_READER_STOPPED: .*GROUP_AUTHORIZATION_FAILED.*; a new consumer in 1 s$/,
    );

    // The ACL is still missing: the new consumer crashes too, and the next wait is longer.
    r.clock.advance(1_000);
    await waitFor(() => r.consumers.length === 2 && r.current().running);
    expect(r.consumers[0]?.disconnected).toBe(true);
    r.current().crashed(protocolError('GROUP_AUTHORIZATION_FAILED'), false);
    expect(r.subject.health().detail).toMatch(/a new consumer in 2 s$/);

    // Fixed: the third consumer joins, resumes after the last nudge, and the reader is healthy again.
    r.clock.advance(2_000);
    await waitFor(() => r.consumers.length === 3 && r.current().running);
    expect(r.subject.health().ok).toBe(false);
    r.current().joined([0]);
    expect(r.current().seeks).toEqual([{ partition: 0, offset: '4' }]);
    expect(r.subject.health()).toEqual({ ok: true });
  });

  it('leaves a crash kafkajs restarts from to kafkajs, staying healthy', async () => {
    const r = reader();
    await r.subject.start();
    r.current().crashed(Object.assign(new Error('coordinator moved'), { retriable: true }), true);
    expect(r.subject.health()).toEqual({ ok: true });
    expect(r.clock.pending).toBe(0);
    expect(r.consumers).toHaveLength(1);
  });

  it('tries a consumer that cannot start again after the backoff instead of failing the start', async () => {
    const refused = protocolError('GROUP_AUTHORIZATION_FAILED');
    const r = reader({
      start: [{ partition: 0, offset: '3' }],
      connect: (n) => (n === 1 ? Promise.reject(refused) : Promise.resolve()),
    });
    await r.subject.start();
    expect(r.subject.health().detail).toMatch(
      /^NUDGE_READER_STOPPED: .*GROUP_AUTHORIZATION_FAILED.*; a new consumer in 1 s$/,
    );
    expect(r.consumers[0]?.disconnected).toBe(true);

    r.clock.advance(1_000);
    await waitFor(() => r.consumers.length === 2 && r.current().running);
    r.current().joined([0]);
    expect(r.current().seeks).toEqual([{ partition: 0, offset: '3' }]);
    expect(r.subject.health()).toEqual({ ok: true });
  });

  it('lets kafkajs restart its consumer after a retriable crash while it reads, and not once it is stopping', async () => {
    const r = reader();
    await r.subject.start();
    const restarts = r.restarts.at(-1);
    expect(restarts?.()).toBe(true);
    // The stop's own disconnect can crash a fetch in flight: kafkajs must not start that consumer again.
    await r.subject.stop();
    expect(restarts?.()).toBe(false);
  });

  it('starts no new consumer once stopped', async () => {
    const r = reader();
    await r.subject.start();
    r.current().crashed(protocolError('TOPIC_AUTHORIZATION_FAILED'), false);
    await r.subject.stop();
    r.clock.advance(60_000);
    await idles();
    expect(r.consumers).toHaveLength(1);
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}
