/**
 * Reads a topic from its beginning up to the end it had when the read started, as a read_committed
 * consumer sees it. Used to load the offsets topic at start, by the Kafka token store, by the
 * `offsets` CLI command and by tests.
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
  try {
    await readToEnd(kafka, options, onRecord);
  } catch (error) {
    if (!(error instanceof KafkaJSError)) throw error; // ConnectorErrors, and programmer errors as they are
    const fatalType = fatalKafkaErrorType(error);
    if (fatalType !== undefined) {
      throw new FatalError(
        'KAFKA_NOT_PERMITTED',
        `Kafka refused reading ${options.topic} (${fatalType}): check the ACLs`,
        { cause: error },
      );
    }
    throw new RetriableError(
      'KAFKA_READ_FAILED',
      `reading ${options.topic} failed: ${describeKafkaError(error)}`,
      { cause: error },
    );
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
  const endByPartition = new Map(ends.map((e) => [e.partition, e.end]));
  const remaining = new Map<number, bigint>();
  for (const { partition, start, end } of ends) if (end > start) remaining.set(partition, end);
  if (remaining.size === 0) return;

  const consumer = kafka.consumer({
    groupId: `${options.groupIdPrefix}-${randomUUID()}`,
    allowAutoTopicCreation: false,
    maxWaitTimeInMs: 100,
    retry: { retries: 3 },
    ...(options.partitions !== undefined && { partitionAssigners: [onlyPartitions([...remaining.keys()])] }),
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
        for (const message of batch.messages) {
          const target = endByPartition.get(batch.partition) ?? 0n;
          // Records appended after the read started are left for whoever reads next.
          if (BigInt(message.offset) >= target) continue;
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
