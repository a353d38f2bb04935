/**
 * Reads a topic from its beginning up to the end it had when the read started, as a read_committed
 * consumer sees it. Used to load the offsets topic at start, by the Kafka token store, by the
 * `offsets` CLI command and by tests. `recordsVisible` reads single records the same way
 * (kafka/topics/records-visible.ts: whether a commit of unknown outcome published its calls).
 *
 * "The end" is the last stable offset (LSO) of each partition, fetched with ListOffsets at
 * read_committed isolation: records of an open transaction lie beyond it. An open transaction left by
 * a crashed instance therefore holds the LSO back until a producer with the same transactionalId
 * initialises and aborts it; this is why a scope's sink (its producer) is opened before its offsets are read (kafka/session.ts).
 * Likewise a transaction whose commit just returned may not be readable yet: the coordinator writes the
 * commit markers right after answering EndTxn. Initialising a producer with the same transactionalId
 * waits for those markers, so after `start()` our own commits are all readable. (A transaction of
 * another connector sharing the offsets topic can also hold the LSO back; we then read a slightly older
 * offset of ours and republish a page: duplicates, never loss. One offsets topic per connector avoids it.)
 *
 * kafkajs 2.2.4 has no manual partition assignment: every consumer joins a group. So each read uses a
 * fresh, throw-away group id and never commits offsets (the broker forgets an empty group without
 * offsets). It needs Read on the topic and on groups with the caller's prefix (the offsets store and
 * the `offsets` command use `<clientId>-offsets-reader`). Joining costs the broker's
 * group.initial.rebalance.delay.ms (3 s by default) once per read, i.e. once at start.
 */
import { randomUUID } from 'node:crypto';
import kafkajs, { type Kafka, type KafkaMessage, type PartitionAssigner } from 'kafkajs';
import { FatalError, RetriableError } from '../../errors/index.js';
import { describeKafkaError, fatalKafkaErrorType } from '../client/kafka-errors.js';
import { whileLeadersSettle } from './leaders-settle.js';
import { startTimer, systemClock, type Clock, type Timer } from '../../time/clock.js';

// kafkajs is CommonJS and Node's ESM loader cannot see this export by name (only vitest's transform can).
const { KafkaJSError, AssignerProtocol } = kafkajs;

export interface TopicRecord {
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: KafkaMessage['headers'];
  timestamp: string;
}

export interface ReadTopicOptions {
  topic: string;
  /** Prefix of the throw-away consumer group id. */
  groupIdPrefix: string;
  /** Give up (RetriableError) when the end is not reached within this time. */
  timeoutMs: number;
  /**
   * Only these partitions (default: all). Used in distributed mode to read just the partitions an instance
   * took over: another owner's open transaction on a partition not read holds nothing back.
   */
  partitions?: readonly number[];
  /** Where the timeout and the waits for a moving leader are measured (default: the system clock). */
  clock?: Clock;
}

/**
 * The throw-away reader group has one member; this assigner gives it just `partitions` of each topic
 * (kafkajs 2.2.4 has no manual assignment, see the module comment).
 */
function onlyPartitions(partitions: readonly number[]): PartitionAssigner {
  const name = 'OnlyPartitions';
  return () => ({
    name,
    version: 0,
    assign: ({ members, topics }) =>
      Promise.resolve(
        members.map(({ memberId }, index) => ({
          memberId,
          memberAssignment: AssignerProtocol.MemberAssignment.encode({
            version: 0,
            assignment: Object.fromEntries(
              topics.map((topic) => [topic, index === 0 ? [...partitions] : []]),
            ),
            userData: Buffer.alloc(0),
          }),
        })),
      ),
    protocol: ({ topics }) => ({
      name,
      metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }),
    }),
  });
}

/**
 * Calls `onRecord` for every committed record, in offset order per partition, and resolves once every
 * partition has been read up to the end it had when the call started.
 *
 * Failures are ConnectorErrors: kafkajs errors (broker unreachable, leader moving, ...) become the
 * RetriableError KAFKA_READ_FAILED, or the FatalError KAFKA_NOT_PERMITTED for an authorization or
 * configuration refusal. A raw kafkajs error would count as a programmer error, and a location that reads
 * its offset back after a failed commit would be stopped for good by a passing broker outage.
 */
export async function readTopicToEnd(
  kafka: Kafka,
  options: ReadTopicOptions,
  onRecord: (record: TopicRecord) => void,
): Promise<void> {
  await asConnectorErrors(options.topic, () => readToEnd(kafka, options, onRecord));
}

export interface RecordsAt {
  topic: string;
  /** Per partition, the offset of the record to look at: its transaction must have ended there. */
  offsets: ReadonlyMap<number, bigint>;
  /** Prefix of the throw-away consumer group id. */
  groupIdPrefix: string;
  /** How long the read may take before a RetriableError. */
  timeoutMs: number;
  clock?: Clock;
}

/**
 * Per partition of `at.offsets`, whether the record at that offset is visible to a read_committed reader: true
 * when its transaction committed (or it was written outside one), false when it was aborted. Call it once the
 * records' transactions have ended on their partitions (stable-offsets.ts awaitStableOffsets): a record beyond
 * the last stable offset reads as not visible. Reads just those partitions from those offsets, through one
 * throw-away consumer group (see the module comment). Failures as readTopicToEnd's.
 */
export async function recordsVisible(kafka: Kafka, at: RecordsAt): Promise<Map<number, boolean>> {
  const clock = at.clock ?? systemClock;
  return asConnectorErrors(at.topic, async () => {
    const visible = new Map([...at.offsets.keys()].map((partition) => [partition, false]));
    const ranges = new Map(
      [...at.offsets].map(([partition, offset]) => [partition, { from: offset, to: offset + 1n }]),
    );
    await readRanges(kafka, { ...at, clock }, ranges, true, (record) => {
      if (BigInt(record.offset) === at.offsets.get(record.partition)) visible.set(record.partition, true);
    });
    return visible;
  });
}

/** Runs a read, turning kafkajs errors into ConnectorErrors (see readTopicToEnd). */
async function asConnectorErrors<T>(topic: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (!(error instanceof KafkaJSError)) throw error; // ConnectorErrors, and programmer errors as they are
    const fatalType = fatalKafkaErrorType(error);
    if (fatalType !== undefined) {
      throw new FatalError(
        'KAFKA_NOT_PERMITTED',
        `Kafka refused reading ${topic} (${fatalType}): check the ACLs`,
        { cause: error },
      );
    }
    throw new RetriableError('KAFKA_READ_FAILED', `reading ${topic} failed: ${describeKafkaError(error)}`, {
      cause: error,
    });
  }
}

async function readToEnd(
  kafka: Kafka,
  options: ReadTopicOptions,
  onRecord: (record: TopicRecord) => void,
): Promise<void> {
  const wanted = options.partitions === undefined ? undefined : new Set(options.partitions);
  const clock = options.clock ?? systemClock;
  const ends = (await endOffsets(kafka, options.topic, clock)).filter(
    (e) => wanted === undefined || wanted.has(e.partition),
  );
  const ranges = new Map<number, { from: bigint; to: bigint }>();
  for (const { partition, start, end } of ends)
    if (end > start) ranges.set(partition, { from: start, to: end });
  await readRanges(kafka, { ...options, clock }, ranges, options.partitions !== undefined, onRecord);
}

/**
 * Reads each partition of `ranges` from `from` (inclusive) up to `to` (exclusive), as read_committed sees
 * it. `onlyThese`: the reader is assigned just those partitions (else every partition, the others unread).
 */
async function readRanges(
  kafka: Kafka,
  options: Pick<ReadTopicOptions, 'topic' | 'groupIdPrefix' | 'timeoutMs'> & { clock: Clock },
  ranges: ReadonlyMap<number, { from: bigint; to: bigint }>,
  onlyThese: boolean,
  onRecord: (record: TopicRecord) => void,
): Promise<void> {
  const { clock } = options;
  const remaining = new Map([...ranges].map(([partition, { to }]) => [partition, to]));
  if (remaining.size === 0) return;

  const consumer = kafka.consumer({
    groupId: `${options.groupIdPrefix}-${randomUUID()}`,
    allowAutoTopicCreation: false,
    maxWaitTimeInMs: 100,
    retry: { retries: 3 },
    ...(onlyThese && { partitionAssigners: [onlyPartitions([...remaining.keys()])] }),
  });
  let timer: Timer | undefined;
  try {
    const reachedEnd = new Promise<void>((resolve, reject) => {
      // Emitted after every fetched batch, including batches holding only transaction markers or
      // aborted records, so the position moves past them even though no message is delivered.
      consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
        const target = remaining.get(payload.partition);
        if (target !== undefined && BigInt(payload.lastOffset) + 1n >= target)
          remaining.delete(payload.partition);
        if (remaining.size === 0) resolve();
      });
      consumer.on(consumer.events.CRASH, ({ payload }) => {
        // kafkajs restarts the consumer itself after a retriable crash; the timeout bounds that.
        if (payload.restart) return;
        reject(
          new RetriableError(
            'KAFKA_READ_FAILED',
            `reading ${options.topic} failed: ${payload.error.message}`,
            { cause: payload.error },
          ),
        );
      });
      timer = startTimer(clock, options.timeoutMs, () => {
        reject(
          new RetriableError(
            'KAFKA_READ_TIMEOUT',
            `reading ${options.topic} to its end took longer than ${options.timeoutMs} ms (partitions not done: ${[...remaining.keys()].join(', ')})`,
          ),
        );
      });
    });
    await consumer.connect();
    await consumer.subscribe({ topic: options.topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const range = ranges.get(batch.partition);
        for (const message of batch.messages) {
          const at = BigInt(message.offset);
          // Records appended after the read started are left for whoever reads next; a batch fetched before
          // the seek below applied may hold records before the range.
          if (range === undefined || at >= range.to || at < range.from) continue;
          onRecord({
            partition: batch.partition,
            offset: message.offset,
            key: message.key,
            value: message.value,
            headers: message.headers,
            timestamp: message.timestamp,
          });
        }
      },
    });
    // Applied before the partition's first fetch (kafkajs keeps seeks made before the assignment).
    for (const [partition, { from }] of ranges)
      if (from > 0n) consumer.seek({ topic: options.topic, partition, offset: String(from) });
    await reachedEnd;
  } finally {
    timer?.cancel();
    await consumer.disconnect();
  }
}

export interface PartitionEnd {
  partition: number;
  /** Log start offset. */
  start: bigint;
  /** Last stable offset (read_committed end). */
  end: bigint;
}

/**
 * Start and read_committed end of every partition of a topic, tried again while its leaders settle (a topic
 * created a moment ago: see leaders-settle.ts).
 */
export async function endOffsets(
  kafka: Kafka,
  topic: string,
  clock: Clock = systemClock,
): Promise<PartitionEnd[]> {
  return whileLeadersSettle(async () => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const offsets = await admin.fetchTopicOffsets(topic);
      return offsets.map((o) => ({ partition: o.partition, start: BigInt(o.low), end: BigInt(o.offset) }));
    } finally {
      await admin.disconnect();
    }
  }, clock);
}
