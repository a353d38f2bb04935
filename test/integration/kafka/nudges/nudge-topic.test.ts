/**
 * The nudge topic on the real broker (distributed mode, issue 33 item 5): created with the offsets topic's
 * partition count, each nudge written to its location's offsets partition, read by an instance's reader, which
 * misses no nudge written before it joined or while it rejoined (issue 40).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { keyPartition, locationPartition } from '../../../../src/kafka/group/location-partition.js';
import { kafkaNudgeReader } from '../../../../src/kafka/nudges/nudge-reader.js';
import {
  decodeNudge,
  ensureNudgeTopic,
  NudgeTopicWriter,
  type NudgeMessage,
  type SharedReplayKey,
} from '../../../../src/kafka/nudges/nudge-topic.js';
import { offsetKey } from '../../../../src/kafka/offsets/offset-codec.js';
import { silentLogger, type Logger } from '../../../../src/logging/logger.js';
import { systemClock } from '../../../../src/time/clock.js';
import { eventually, readCommitted, testKafka } from '../../../support/kafka.js';
import { capturingLogger } from '../../../support/logger.js';
import { uniqueName } from '../../../support/stack.js';

const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) await close();
});

const CONNECTOR = 'nudging';

/** A nudge topic of `partitions` partitions and a writer for connector CONNECTOR. */
async function nudgeTopic(partitions: number) {
  const kafka = testKafka();
  const topic = `${uniqueName('offsets')}-nudges`;
  await ensureNudgeTopic(kafka, { topic, partitions, replicationFactor: 1, create: true });
  const writer = new NudgeTopicWriter(kafka, { topic, connectorName: CONNECTOR, partitionCount: partitions });
  await writer.connect();
  opened.push(() => writer.disconnect());
  return { kafka, topic, writer };
}

/** A reader of `topic` started in a group of its own (or `groupId`), and the nudges it hands on. */
async function startReader(
  kafka: ReturnType<typeof testKafka>,
  topic: string,
  options: {
    startAtMs?: number;
    groupId?: string;
    logger?: Logger;
    keysFromMs?: number;
    keys?: SharedReplayKey[];
  } = {},
): Promise<NudgeMessage[]> {
  const read: NudgeMessage[] = [];
  const reader = kafkaNudgeReader(kafka, {
    topic,
    groupId: options.groupId ?? uniqueName('nudge-reader'),
    startAtMs: options.startAtMs ?? Date.now(),
    ...(options.keysFromMs !== undefined && { keysFromMs: options.keysFromMs }),
    replayKeys: (key) => options.keys?.push(key),
    each: (nudge) => read.push(nudge),
    clock: systemClock,
    logger: options.logger ?? silentLogger(),
  });
  await reader.start();
  opened.push(() => reader.stop());
  return read;
}

/** Writes a warm-up nudge until the reader has read one: it has joined and reads. */
async function warmUp(writer: NudgeTopicWriter, read: NudgeMessage[]): Promise<void> {
  await eventually(
    async () => {
      await writer.write([{ location: location(99), uid: 'warm-up', event: 'call.updated' }]);
      return read.length > 0;
    },
    30_000,
    'the reader reading',
  );
}

const location = (n: number) => `00000000-0000-0000-0000-${String(n).padStart(12, '0')}`;

describe('the nudge topic', () => {
  it('carries each nudge to its location’s offsets partition and to a reader started before it', async () => {
    const kafka = testKafka();
    const topic = `${uniqueName('offsets')}-nudges`;
    const connectorName = uniqueName('nudging');
    await ensureNudgeTopic(kafka, { topic, partitions: 3, replicationFactor: 1, create: true });
    const writer = new NudgeTopicWriter(kafka, { topic, connectorName, partitionCount: 3 });
    await writer.connect();
    opened.push(() => writer.disconnect());
    const read = await startReader(kafka, topic);
    await warmUp(writer, read);

    const nudges = [1, 2, 3, 4, 5, 6].map((n) => ({
      location: location(n),
      uid: `c${n}`,
      event: 'call.updated',
    }));
    await writer.write(nudges);
    await eventually(
      () => nudges.every((n) => read.some((r) => r.uid === n.uid)),
      30_000,
      'every nudge read',
    );
    // In order within a partition only: compared as sets.
    const byUid = (a: NudgeMessage, b: NudgeMessage) => a.uid.localeCompare(b.uid);
    expect(read.filter((r) => r.uid !== 'warm-up').sort(byUid)).toEqual(nudges);

    const records = (await readCommitted(kafka, topic)).filter(
      (r) => decodeNudge(r.value)?.uid !== 'warm-up',
    );
    expect(records).toHaveLength(6);
    for (const record of records) {
      const nudge = decodeNudge(record.value);
      expect(record.partition).toBe(locationPartition(connectorName, nudge?.location ?? '', 3));
    }
  });

  it('reads the replay keys written since keysFromMs before its start time, acting on none of their nudges', async () => {
    const { kafka, topic, writer } = await nudgeTopic(3);
    const keysFromMs = Date.now() - 60_000;
    const before = { key: 'id:before-start', atMs: Date.now() };
    await writer.write([{ location: location(1), uid: 'before', event: 'call.updated' }], before);
    const writtenAt = Date.now();
    await eventually(() => Date.now() > writtenAt, 1_000, 'a start time after the write');
    const keys: SharedReplayKey[] = [];
    const read = await startReader(kafka, topic, { startAtMs: Date.now(), keysFromMs, keys });
    await warmUp(writer, read);
    await eventually(() => keys.some((k) => k.key === before.key), 30_000, 'the earlier key read');
    expect(keys.find((k) => k.key === before.key)).toEqual(before);
    expect(read.map((n) => n.uid)).not.toContain('before');
  });

  it('reads the nudges written since its start time, before it joined', async () => {
    const { kafka, topic, writer } = await nudgeTopic(3);
    const startAtMs = Date.now();
    const early = [1, 2, 3, 4].map((n) => ({
      location: location(n),
      uid: `early${n}`,
      event: 'call.updated',
    }));
    await writer.write(early);
    const read = await startReader(kafka, topic, { startAtMs });
    await eventually(
      () => early.every((n) => read.some((r) => r.uid === n.uid)),
      30_000,
      'every nudge written before the join read',
    );
  });

  it('reads the nudges written while it rejoined its group, however the partitions moved meanwhile', async () => {
    const { kafka, topic, writer } = await nudgeTopic(3);
    const groupId = uniqueName('nudge-reader');
    const log = capturingLogger();
    const read = await startReader(kafka, topic, { groupId, logger: log.logger });
    await warmUp(writer, read);
    // Another member joins the reader's group: the partitions it takes are away from the reader until it
    // leaves and the reader rejoins with all of them. It reads nothing (paused) and commits nothing.
    const other = kafka.consumer({ groupId });
    let otherPartitions: number[] = [];
    other.on(other.events.GROUP_JOIN, ({ payload }) => {
      otherPartitions = payload.memberAssignment[topic] ?? [];
      other.pause([{ topic }]);
    });
    await other.connect();
    await other.subscribe({ topic, fromBeginning: false });
    await other.run({ autoCommit: false, eachMessage: async () => undefined });
    await eventually(() => otherPartitions.length > 0, 30_000, 'the other member holding partitions');

    const gap = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => ({
      location: location(n),
      uid: `gap${n}`,
      event: 'call.updated',
    }));
    await writer.write(gap);
    const held = gap.filter((n) =>
      otherPartitions.includes(keyPartition(offsetKey(CONNECTOR, n.location), 3)),
    );
    expect(held.length).toBeGreaterThan(0);
    await other.disconnect();
    await eventually(
      () => gap.every((n) => read.some((r) => r.uid === n.uid)),
      30_000,
      'every nudge written while the reader rejoined read',
    ).catch((error: unknown) => {
      const missing = gap.filter((n) => !read.some((r) => r.uid === n.uid)).map((n) => n.uid);
      throw new Error(`${String(error)}; missing ${missing.join(', ')}; the reader's log:\n${log.text()}`);
    });
  });

  it('refuses an existing nudge topic whose partition count is not the offsets topic’s', async () => {
    const kafka = testKafka();
    const topic = `${uniqueName('offsets')}-nudges`;
    await ensureNudgeTopic(kafka, { topic, partitions: 2, replicationFactor: 1, create: true });
    await expect(
      ensureNudgeTopic(kafka, { topic, partitions: 3, replicationFactor: 1, create: true }),
    ).rejects.toMatchObject({ code: 'KAFKA_TOPIC_PARTITIONS_MISMATCH' });
  });
});
