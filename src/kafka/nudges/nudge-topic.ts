/**
 * The nudge topic (`<kafka.offsetsTopic>-nudges`, distributed mode): a webhook delivery reaches whichever
 * instance the load balancer picked, and its nudge travels here to the instance that owns the location.
 *
 * - Partitioned like the offsets topic: as many partitions, and each record written to the partition of its
 *   key `<connectorName>/<locationUid>` (location-partition.ts, the offsets topic's own partitioner), so a
 *   location's nudges sit in the partition whose offsets its owner holds.
 * - Written with acks from all in-sync replicas before the receiver acknowledges the delivery (a failed write
 *   rejects, the receiver answers 503 and the API retries).
 * - Read by every instance (nudge-reader.ts, a consumer group of its own that never commits, from the instance's
 *   start and, after any rejoin, from where it stopped): each nudges only the locations its scheduler runs,
 *   which are exactly those of the partitions it owns; others are skipped. kafkajs has no manual partition
 *   assignment, and nudges are a few bytes each, so reading every partition costs little. A nudge read while its
 *   location changes owner may reach neither owner: the new owner polls the location when it takes it over.
 * - Retention is short (an hour): a nudge is worth something for seconds, a replay key for the replay window's
 *   keep time (10 minutes by default), which a starting instance reads back (nudge-reader.ts `keysFromMs`).
 * - Each record also carries the replay key of the delivery it came from (`replay`, version 2), which every
 *   instance's reader enters into its own replay window, so a replay of a delivery sent to another instance is
 *   refused there too. A delivery's nudges that all go to one partition carry it themselves (one batch, appended
 *   whole or not at all); nudges spread over several partitions are not written atomically, so they carry none
 *   and one key record follows once they all are durable: a key is never shared for a delivery whose nudges
 *   were not all written (its retry, to any instance, must be taken).
 *
 * Record layout (JSON): `{"v": 2, "location", "uid", "event", "replay"?: {"key", "atMs"}}` for a nudge,
 * `{"v": 2, "replay": {"key", "atMs"}}` for a key record. Readers before version 2 read `location`, `uid` and
 * `event` only: they ignore `replay` and skip a key record as "not a nudge"; a version 2 reader takes a version 1
 * nudge (no `replay`) as a nudge whose key is not shared.
 */
import type { Kafka, Producer } from 'kafkajs';
import { FatalError } from '../../errors/index.js';
import { keyPartition } from '../group/location-partition.js';
import { offsetKey } from '../offsets/offset-codec.js';
import { ensureTopics, topicPartitionCount } from '../topics/topics.js';

/** One nudge for one location, as the topic carries it. */
export interface NudgeMessage {
  location: string;
  uid: string;
  event: string;
}

/** The replay key of a delivery taken by one instance, as the topic carries it to the others. */
export interface SharedReplayKey {
  /** The receiver's replay key (a signed id or a digest of the signed content; never a secret). */
  key: string;
  /** When the receiving instance verified the delivery (epoch ms): the key is kept from then. */
  atMs: number;
}

/** One record of the topic: a nudge, the replay key of the delivery it came from, or both. */
export interface NudgeRecord {
  nudge: NudgeMessage | null;
  replay: SharedReplayKey | null;
}

/** The version written; a reader takes any version's fields it knows. */
const RECORD_VERSION = 2;

/** How long the topic keeps a record: a nudge is worth something for seconds, a replay key for minutes. */
export const NUDGE_RETENTION_MS = 3_600_000;

export function nudgeTopicName(offsetsTopic: string): string {
  return `${offsetsTopic}-nudges`;
}

/** Creates the nudge topic with the offsets topic's partition count, or checks an existing one has it. */
export async function ensureNudgeTopic(
  kafka: Kafka,
  options: { topic: string; partitions: number; replicationFactor: number; create: boolean },
): Promise<void> {
  await ensureTopics(
    kafka,
    [
      {
        topic: options.topic,
        partitions: options.partitions,
        replicationFactor: options.replicationFactor,
        configs: { 'retention.ms': String(NUDGE_RETENTION_MS) },
        configKey: 'kafka.offsetsTopic (its -nudges topic)',
      },
    ],
    options.create,
  );
  const partitions = await topicPartitionCount(kafka, options.topic);
  if (partitions !== options.partitions) {
    throw new FatalError(
      'KAFKA_TOPIC_PARTITIONS_MISMATCH',
      `topic ${options.topic} has ${partitions} partitions, but the offsets topic has ${options.partitions}: ` +
        'nudges would reach the wrong instances. Delete it (it holds only transient nudges) and restart.',
    );
  }
}

/** A nudge record; with `replay`, it also shares the replay key of the delivery it came from. */
export function encodeNudge(message: NudgeMessage, replay?: SharedReplayKey): Buffer {
  const { location, uid, event } = message;
  return Buffer.from(
    JSON.stringify({ v: RECORD_VERSION, location, uid, event, ...(replay && { replay: sharedKey(replay) }) }),
    'utf8',
  );
}

/** A key record: the replay key of a delivery whose nudges went to several partitions, written after them. */
export function encodeReplayKey(replay: SharedReplayKey): Buffer {
  return Buffer.from(JSON.stringify({ v: RECORD_VERSION, replay: sharedKey(replay) }), 'utf8');
}

/**
 * What a record carries: its nudge and its shared replay key, each null when absent or malformed (a malformed
 * `replay` never costs the nudge beside it); null for a record that carries neither (skipped, never fatal).
 */
export function decodeNudgeRecord(value: Buffer | null): NudgeRecord | null {
  if (value === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const { location, uid, event, replay } = parsed as Record<string, unknown>;
  const nudge =
    typeof location === 'string' && typeof uid === 'string' && typeof event === 'string'
      ? { location, uid, event }
      : null;
  const shared = decodeSharedKey(replay);
  return nudge === null && shared === null ? null : { nudge, replay: shared };
}

/** The nudge a record carries; null for a record that is not one (skipped, never fatal). */
export function decodeNudge(value: Buffer | null): NudgeMessage | null {
  return decodeNudgeRecord(value)?.nudge ?? null;
}

function sharedKey({ key, atMs }: SharedReplayKey): SharedReplayKey {
  return { key, atMs };
}

function decodeSharedKey(value: unknown): SharedReplayKey | null {
  if (typeof value !== 'object' || value === null) return null;
  const { key, atMs } = value as Record<string, unknown>;
  return typeof key === 'string' && key !== '' && typeof atMs === 'number' && Number.isFinite(atMs)
    ? { key, atMs }
    : null;
}

/** Writes nudges, each to its location's partition; `write` resolves once all in-sync replicas have them. */
export class NudgeTopicWriter {
  private readonly producer: Producer;

  constructor(
    kafka: Kafka,
    private readonly options: { topic: string; connectorName: string; partitionCount: number },
  ) {
    this.producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
    });
  }

  async connect(): Promise<void> {
    await this.producer.connect();
  }

  /**
   * Writes one delivery's nudges, and its replay key when given (the module comment says where): resolves once
   * all are durable; rejects when any is not (the delivery is then answered 503 and retried).
   */
  async write(messages: readonly NudgeMessage[], replay?: SharedReplayKey): Promise<void> {
    const { topic, connectorName, partitionCount } = this.options;
    const placed = messages.map((message) => {
      const key = offsetKey(connectorName, message.location);
      return { message, key, partition: keyPartition(key, partitionCount) };
    });
    const onePartition = new Set(placed.map((p) => p.partition)).size <= 1;
    await this.producer.send({
      topic,
      acks: -1,
      messages: placed.map(({ message, key, partition }) => ({
        key,
        partition,
        value: encodeNudge(message, onePartition ? replay : undefined),
      })),
    });
    const first = placed[0];
    if (replay === undefined || onePartition || first === undefined) return;
    await this.producer.send({
      topic,
      acks: -1,
      messages: [{ key: first.key, partition: first.partition, value: encodeReplayKey(replay) }],
    });
  }

  async disconnect(): Promise<void> {
    await this.producer.disconnect();
  }
}
