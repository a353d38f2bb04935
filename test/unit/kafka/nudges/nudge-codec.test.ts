import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { keyPartition } from '../../../../src/kafka/group/location-partition.js';
import {
  decodeNudge,
  decodeNudgeRecord,
  encodeNudge,
  encodeReplayKey,
  NudgeTopicWriter,
  nudgeTopicName,
} from '../../../../src/kafka/nudges/nudge-topic.js';
import { offsetKey } from '../../../../src/kafka/offsets/offset-codec.js';

/** The decoder of version 1 (before replay keys were shared), as an instance not yet upgraded runs it. */
function versionOneDecode(value: Buffer | null): { location: string; uid: string; event: string } | null {
  if (value === null) return null;
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null) return null;
    const { location, uid, event } = parsed as Record<string, unknown>;
    if (typeof location !== 'string' || typeof uid !== 'string' || typeof event !== 'string') return null;
    return { location, uid, event };
  } catch {
    return null;
  }
}

const nudge = { location: 'L1', uid: 'c1', event: 'call.updated' };
const replay = { key: 'id:msg_1', atMs: 1_700_000_000_123 };

describe('nudge records', () => {
  it('round-trip a nudge', () => {
    expect(decodeNudge(encodeNudge(nudge))).toEqual(nudge);
    expect(decodeNudgeRecord(encodeNudge(nudge))).toEqual({ nudge, replay: null });
  });

  it('round-trip a nudge with the replay key of its delivery, and a key record of its own', () => {
    expect(decodeNudgeRecord(encodeNudge(nudge, replay))).toEqual({ nudge, replay });
    expect(decodeNudgeRecord(encodeReplayKey(replay))).toEqual({ nudge: null, replay });
    expect(decodeNudge(encodeReplayKey(replay))).toBeNull();
  });

  it('read a version 1 nudge (no replay key) as a nudge whose key is not shared', () => {
    const v1 = Buffer.from('{"v":1,"location":"L1","uid":"c1","event":"call.updated"}');
    expect(decodeNudgeRecord(v1)).toEqual({ nudge, replay: null });
  });

  it('are read by a version 1 reader: it takes the nudge and skips a key record', () => {
    expect(versionOneDecode(encodeNudge(nudge, replay))).toEqual(nudge);
    expect(versionOneDecode(encodeReplayKey(replay))).toBeNull();
  });

  it('keep the nudge beside a malformed replay key', () => {
    for (const bad of ['"id:x"', '{"key":"","atMs":1}', '{"key":"id:x","atMs":"1"}', '{"key":"id:x"}'])
      expect(
        decodeNudgeRecord(
          Buffer.from(`{"v":2,"location":"L1","uid":"c1","event":"call.updated","replay":${bad}}`),
        ),
      ).toEqual({ nudge, replay: null });
  });

  it('skip what is not a nudge (a tombstone, other JSON, not JSON)', () => {
    expect(decodeNudge(null)).toBeNull();
    expect(decodeNudge(Buffer.from('{"location":"L1","uid":7,"event":"call.updated"}'))).toBeNull();
    expect(decodeNudge(Buffer.from('"text"'))).toBeNull();
    expect(decodeNudge(Buffer.from('{not json'))).toBeNull();
    expect(decodeNudgeRecord(Buffer.from('{"v":2,"replay":{"key":7}}'))).toBeNull();
  });

  it('live in the offsets topic’s -nudges topic', () => {
    expect(nudgeTopicName('calls-connector-offsets')).toBe('calls-connector-offsets-nudges');
  });
});

interface Sent {
  partition: number;
  value: Buffer;
}

/** A writer whose producer records each send (one array per send). */
function recordingWriter(partitionCount: number) {
  const sends: Sent[][] = [];
  const kafka = {
    producer: () => ({
      connect: () => Promise.resolve(),
      disconnect: () => Promise.resolve(),
      send: (request: { messages: Sent[] }) => {
        sends.push(request.messages.map(({ partition, value }) => ({ partition, value })));
        return Promise.resolve([]);
      },
    }),
  } as unknown as Kafka;
  const writer = new NudgeTopicWriter(kafka, { topic: 't-nudges', connectorName: 'c', partitionCount });
  return { writer, sends };
}

const partitionOf = (location: string, partitionCount: number) =>
  keyPartition(offsetKey('c', location), partitionCount);
/** Locations of distinct partitions of a 4-partition topic. */
function spreadLocations(): string[] {
  const byPartition = new Map<number, string>();
  for (let n = 0; byPartition.size < 2; n++) byPartition.set(partitionOf(`L${n}`, 4), `L${n}`);
  return [...byPartition.values()];
}

describe('the nudge topic writer', () => {
  it('puts a delivery’s replay key in its nudges when they all go to one partition (one batch)', async () => {
    const { writer, sends } = recordingWriter(1);
    await writer.write(
      [
        { ...nudge, location: 'L1' },
        { ...nudge, location: 'L2' },
      ],
      replay,
    );
    expect(sends).toHaveLength(1);
    expect(sends[0]?.map((m) => decodeNudgeRecord(m.value)?.replay)).toEqual([replay, replay]);
  });

  it('writes the key in a record of its own after nudges spread over several partitions', async () => {
    const { writer, sends } = recordingWriter(4);
    const [a, b] = spreadLocations() as [string, string];
    await writer.write(
      [
        { ...nudge, location: a },
        { ...nudge, location: b },
      ],
      replay,
    );
    expect(sends).toHaveLength(2);
    expect(sends[0]?.map((m) => decodeNudgeRecord(m.value))).toEqual([
      { nudge: { ...nudge, location: a }, replay: null },
      { nudge: { ...nudge, location: b }, replay: null },
    ]);
    expect(sends[1]?.map((m) => [m.partition, decodeNudgeRecord(m.value)])).toEqual([
      [partitionOf(a, 4), { nudge: null, replay }],
    ]);
  });

  it('writes no key without one (unsigned deliveries allowed)', async () => {
    const { writer, sends } = recordingWriter(4);
    await writer.write(spreadLocations().map((location) => ({ ...nudge, location })));
    expect(sends).toHaveLength(1);
    expect(sends[0]?.every((m) => decodeNudgeRecord(m.value)?.replay === null)).toBe(true);
  });
});
