/**
 * The nudge topic on the real broker (distributed mode, issue 33 item 5): created with the offsets topic's
 * partition count, each nudge written to its location's offsets partition, read by an instance's reader.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { locationPartition } from '../../../../src/kafka/group/location-partition.js';
import {
  decodeNudge,
  ensureNudgeTopic,
  NudgeTopicReader,
  NudgeTopicWriter,
  type NudgeMessage,
} from '../../../../src/kafka/nudges/nudge-topic.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { eventually, readCommitted, testKafka } from '../../../support/kafka.js';
import { uniqueName } from '../../../support/stack.js';

const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) await close();
});

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
    const read: NudgeMessage[] = [];
    const reader = new NudgeTopicReader(kafka, {
      topic,
      groupId: uniqueName('nudge-reader'),
      each: (nudge) => read.push(nudge),
      logger: silentLogger(),
    });
    await reader.start();
    opened.push(() => reader.stop());
    // The reader starts at the end once it has joined: a warm-up nudge until it sees one.
    await eventually(
      async () => {
        await writer.write([{ location: location(99), uid: 'warm-up', event: 'call.updated' }]);
        return read.length > 0;
      },
      30_000,
      'the reader reading',
    );

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

  it('refuses an existing nudge topic whose partition count is not the offsets topic’s', async () => {
    const kafka = testKafka();
    const topic = `${uniqueName('offsets')}-nudges`;
    await ensureNudgeTopic(kafka, { topic, partitions: 2, replicationFactor: 1, create: true });
    await expect(
      ensureNudgeTopic(kafka, { topic, partitions: 3, replicationFactor: 1, create: true }),
    ).rejects.toMatchObject({ code: 'KAFKA_TOPIC_PARTITIONS_MISMATCH' });
  });
});
