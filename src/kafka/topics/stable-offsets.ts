/**
 * "Everything written so far is settled": waits until the last stable offset (LSO) of some partitions has
 * reached the high watermark they had when the wait began, so that a read_committed read made afterwards sees
 * every transaction that was open at that moment as committed or aborted, none as "not there yet".
 *
 * Why (docs/reliability.md): a sink that lost a commit's outcome reads its locations' offsets back and
 * takes "the stored offset is still the committed one" as proof that the write was aborted. A read_committed read
 * stops at the LSO, so while ANY transaction is open ahead of it on that partition (markers of our own commit
 * still pending after a broker restart, a neighbour connector's transaction, a hanging transaction whose marker
 * was lost) the read shows the old offset although our page may be, or become, committed: committing the page
 * again then publishes it twice. The offsets store makes its reads wait here first (KafkaOffsetStore option
 * `awaitOpenTransactions`), after the sink's producer initialised (which aborts or completes our own).
 *
 * An open transaction ends within its own timeout (a crashed writer's is aborted by the coordinator). One that
 * never ends is a hanging transaction: only an operator can close it, so past `timeoutMs` this fails with the
 * RetriableError KAFKA_TRANSACTION_OPEN naming the partition, its stuck offset and Kafka's own tool for it; the
 * caller retries (a sink's settle keeps its pages, nothing is published twice meanwhile).
 *
 * kafkajs's admin lists offsets at read_committed isolation only (the LSO). The high watermark needs a
 * ListOffsets at read_uncommitted, which kafkajs sends from a cluster built with that isolation level: its
 * private cluster factory (kafkajs is pinned exactly; a missing factory is a FatalError, never a silent skip).
 */
import type { Kafka } from 'kafkajs';
import { FatalError, RetriableError } from '../../errors/index.js';
import { backoffDelayMs, type Backoff } from '../../time/backoff.js';
import { systemClock, type Clock } from '../../time/clock.js';
import { describeKafkaError } from '../client/kafka-errors.js';
import { endOffsets, type PartitionEnd } from './topic-reader.js';
import { whileLeadersSettle } from './leaders-settle.js';

/** kafkajs's protocol value of isolation level read_uncommitted. */
const READ_UNCOMMITTED = 0;

/** The part of kafkajs's internal Cluster this module uses. */
interface InternalCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addTargetTopic(topic: string): Promise<void>;
  refreshMetadataIfNecessary(): Promise<void>;
  fetchTopicsOffset(
    topics: ReadonlyArray<{
      topic: string;
      partitions: ReadonlyArray<{ partition: number }>;
      fromBeginning: boolean;
    }>,
  ): Promise<Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>>;
}
type ClusterFactory = (options: {
  isolationLevel: number;
  allowAutoTopicCreation: boolean;
}) => InternalCluster;

function clusterFactory(kafka: Kafka): ClusterFactory {
  const key = Object.getOwnPropertySymbols(kafka).find(
    (s) => s.description === 'private:Kafka:createCluster',
  );
  const factory: unknown = key === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[key];
  if (typeof factory !== 'function')
    throw new FatalError(
      'KAFKA_READ_COMMITTED_FIX_MISSING',
      'this kafkajs has no private cluster factory (its internals changed): the high watermarks that prove an offsets read complete cannot be listed, so kafka.exactlyOnce cannot be guaranteed and the connector does not start',
    );
  return factory as ClusterFactory;
}

/** Throws the FatalError above when this kafkajs cannot list high watermarks (checked at start, exactly-once). */
export function assertHighWatermarksListable(kafka: Kafka): void {
  clusterFactory(kafka);
}

/** Each partition's high watermark: the end of everything written to it, committed, open or aborted. */
export async function highWatermarks(
  kafka: Kafka,
  topic: string,
  partitions: readonly number[],
  clock: Clock = systemClock,
): Promise<Map<number, bigint>> {
  const create = clusterFactory(kafka);
  return whileLeadersSettle(async () => {
    const cluster = create({ isolationLevel: READ_UNCOMMITTED, allowAutoTopicCreation: false });
    await cluster.connect();
    try {
      await cluster.addTargetTopic(topic);
      await cluster.refreshMetadataIfNecessary();
      const [answer] = await cluster.fetchTopicsOffset([
        { topic, partitions: partitions.map((partition) => ({ partition })), fromBeginning: false },
      ]);
      return new Map((answer?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
    } finally {
      await cluster.disconnect();
    }
  }, clock);
}

/** Between looks at the LSO: 100 ms doubling to 2 s (an open transaction usually ends within milliseconds). */
const LOOK_AGAIN: Backoff = Object.freeze({
  initialDelayMs: 100,
  maxDelayMs: 2_000,
  multiplier: 2,
  jitter: 0,
});

export interface AwaitStableOptions {
  topic: string;
  partitions: readonly number[];
  /** Give up (RetriableError KAFKA_TRANSACTION_OPEN) when a transaction stays open this long. */
  timeoutMs: number;
  /**
   * Called once when the wait has lasted `waitingNoticeMs` (default 5 s), with the partitions still open and
   * their last stable offsets: a caller's log line, so that a long wait is never silent.
   */
  onLongWait?: (open: ReadonlyArray<{ partition: number; stableOffset: string }>) => void;
  waitingNoticeMs?: number;
  clock?: Clock;
}

/**
 * Resolves once every partition's LSO is at or past the high watermark it had when this was called: every
 * transaction open then has ended. See the module comment for why, and for the error past `timeoutMs`.
 */
export async function awaitSettledTransactions(kafka: Kafka, options: AwaitStableOptions): Promise<void> {
  const clock = options.clock ?? systemClock;
  const { topic, partitions } = options;
  if (partitions.length === 0) return;
  let written: Map<number, bigint>;
  try {
    written = await highWatermarks(kafka, topic, partitions, clock);
  } catch (error) {
    if (error instanceof FatalError) throw error;
    throw new RetriableError(
      'KAFKA_READ_FAILED',
      `listing the ends of ${topic} failed: ${describeKafkaError(error)}`,
      {
        cause: error,
      },
    );
  }
  await awaitStableOffsets(kafka, {
    ...options,
    targets: new Map(partitions.map((p) => [p, written.get(p) ?? 0n])),
  });
}

/**
 * Resolves, with the partitions' ends as last listed, once each partition of `targets` has its LSO at or past
 * its target: every transaction open before that offset has ended. Past `timeoutMs`, the RetriableError
 * KAFKA_TRANSACTION_OPEN of the module comment. Shared by the offsets reads (targets: the high watermarks) and
 * the sink's read-back of a commit's records (targets: just past each record).
 */
export async function awaitStableOffsets(
  kafka: Kafka,
  options: Omit<AwaitStableOptions, 'partitions'> & { targets: ReadonlyMap<number, bigint> },
): Promise<Map<number, PartitionEnd>> {
  const clock = options.clock ?? systemClock;
  const { topic, targets } = options;
  const began = clock.now();
  const deadline = began + options.timeoutMs;
  let noticed = false;
  for (let look = 1; ; look += 1) {
    const ends = new Map((await endOffsets(kafka, topic, clock)).map((e) => [e.partition, e]));
    const stable = (p: number): bigint => ends.get(p)?.end ?? -1n;
    const open = [...targets].filter(([p, target]) => stable(p) < target).map(([p]) => p);
    if (open.length === 0) return ends;
    if (!noticed && clock.now() - began >= (options.waitingNoticeMs ?? 5_000)) {
      noticed = true;
      options.onLongWait?.(open.map((p) => ({ partition: p, stableOffset: String(stable(p)) })));
    }
    if (clock.now() >= deadline) {
      const stuck = open.map((p) => `partition ${p} stable at offset ${String(stable(p))}`).join(', ');
      throw new RetriableError(
        'KAFKA_TRANSACTION_OPEN',
        `a transaction on ${topic} has stayed open for more than ${options.timeoutMs} ms (${stuck}), so a read_committed ` +
          `read would not show what was written before it. It ends at its transaction timeout; if it does not, it is a ` +
          `hanging transaction: \`kafka-transactions.sh --bootstrap-server <broker> describe-producers --topic ${topic} --partition <p>\` ` +
          `shows it and \`kafka-transactions.sh ... abort --topic ${topic} --partition <p> --start-offset <offset>\` ends it ` +
          `(if the producer is this connector's, abort it while this process runs: it then writes the page's offset again rather than publish it twice; docs/runbook.md#runbook-transaction-open)`,
        { details: { topic, partitions: open, stableOffsets: open.map((p) => String(stable(p))) } },
      );
    }
    await clock.sleep(Math.min(backoffDelayMs(LOOK_AGAIN, look, 0), Math.max(1, deadline - clock.now())));
  }
}
