/**
 * At-least-once RecordSink (`kafka.exactlyOnce: false`): an idempotent producer (no duplicates from its
 * own retries), acks=all; a page's calls and dead letters are sent and acknowledged first, then its
 * offset.
 *
 * The trade: no AddPartitionsToTxn / EndTxn round trips and no transaction markers, and consumers may
 * read uncommitted; but a crash (or a failed offset write) after the records were acknowledged and
 * before the offset was leaves the offset behind, so that page is published again on restart:
 * duplicates are possible, loss is not. There is no fencing either: two instances of one connector both
 * publish. Consumers must tolerate duplicates (keep the latest version per uid + updatedAt).
 *
 * Group commit: the producer is idempotent with one request in flight (kafkajs numbers a batch's records
 * when it builds the request, so two requests in flight would share sequence numbers), and each produce
 * request is a round trip. Sending every page as "records, await, offset, await" serialised the pages of all
 * locations at two round trips each: the at-least-once mode was slower than exactly-once. Now one request is
 * in flight at a time and carries, together:
 * - the records of every page queued while the previous request was in flight (within maxBytesPerSend), and
 * - the offsets of the pages whose records an earlier request had acknowledged (and of pages with no
 *   records at all, which have nothing to wait for).
 * A page's offset therefore never travels in the same request as its records, nor before them; a page
 * resolves once the request holding its offset is acknowledged. A failed request rejects every page in it:
 * a page whose records were acknowledged but whose offset was not is published again when retried
 * (duplicates, never loss).
 *
 * After a failed send the producer is discarded and the next page builds a new one: kafkajs rolls its
 * sequence numbers back when a produce request fails, even one the broker wrote, so the next batch on
 * that producer would be refused (OUT_OF_ORDER_SEQUENCE_NUMBER) or, holding as many records, taken by the
 * broker for a duplicate and acknowledged without being written. A new producer id starts afresh.
 *
 * The producer's build, discard and close are the shared ProducerLifecycle's (producer-lifecycle.ts);
 * this file is how a page is written.
 */
import type { CompressionTypes, Producer, ProducerConfig } from 'kafkajs';
import { ConnectorError, FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import { commitOutcomes } from '../../sync/location/commit-outcome.js';
import type { CommitOutcome, PageCommit, RecordSink } from '../../sync/ports.js';
import { describeKafkaError, kafkaErrorTypes } from '../client/kafka-errors.js';
import {
  chunkTopicMessages,
  countDiverted,
  topicMessages,
  type CallEncoder,
  type DivertedMetrics,
  type SinkTopics,
} from '../records/page-messages.js';
import { groupSize, hasRecords, PageQueue, settlePages, type PendingPage } from './page-queue.js';
import { systemClock, type Clock } from '../../time/clock.js';
import { ProducerLifecycle, type ProducerLifecycleOptions } from './producer-lifecycle.js';
import {
  isRetriedFailure,
  kafkaUnavailable,
  notPermittedError,
  programmerError,
  sinkProducerConfig,
} from './sink-errors.js';

/** The part of a kafkajs producer this sink uses; kafkajs' Producer satisfies it. */
export type IdempotentProducer = Pick<Producer, 'connect' | 'disconnect' | 'send' | 'sendBatch'>;

/** The metrics the at-least-once sink updates. */
export type AtLeastOnceSinkMetrics = ProducerLifecycleOptions<IdempotentProducer>['metrics'] &
  DivertedMetrics;

export interface AtLeastOnceSinkOptions {
  /** Builds the producer: a kafkajs `Kafka` client (a seam for unit tests). */
  kafka: { producer(config: ProducerConfig): IdempotentProducer };
  encoder: CallEncoder;
  topics: SinkTopics;
  connectorName: string;
  /**
   * Bytes per sendBatch call (kafka.maxBytesPerTransaction, under max.message.bytes): a request takes
   * further queued pages only while their messages stay under it, and a larger page is sent in parts
   * (chunkTopicMessages). Unset: every queued page in one call.
   */
  maxBytesPerSend?: number;
  /** Codec of the record batches (kafka.compression); default none. */
  compression?: CompressionTypes;
  metrics: AtLeastOnceSinkMetrics;
  logger: Logger;
  clock?: Clock;
  /**
   * Called once on a programmer error inside the sink (SINK_PROGRAMMER_ERROR): the process should stop, so a
   * supervisor restarts it (retrying a bug repeats it; stopping the pages' locations would stop them for good).
   */
  onFatal?: (error: FatalError) => void;
}

export class AtLeastOnceRecordSink implements RecordSink {
  private readonly producers: ProducerLifecycle<IdempotentProducer>;
  private started = false;
  /** Pages whose records are not sent yet, in arrival order. */
  private readonly queue: PageQueue;
  /** Pages whose records were acknowledged and whose offset goes with the next request. */
  private readonly acknowledged: PendingPage[] = [];
  /** The pages of the request in flight. */
  private sending: readonly PendingPage[] = [];
  private readonly clock: Clock;

  constructor(private readonly options: AtLeastOnceSinkOptions) {
    this.clock = options.clock ?? systemClock;
    this.queue = new PageQueue({
      encoder: options.encoder,
      connectorName: options.connectorName,
      drain: (queue) => this.drain(queue),
      pendingBesidesQueue: () => this.acknowledged.length > 0,
    });
    this.producers = new ProducerLifecycle({
      build: () => options.kafka.producer(sinkProducerConfig()),
      metrics: options.metrics,
      logger: options.logger.child({ component: 'at-least-once-sink' }),
      clock: this.clock,
    });
  }

  async start(): Promise<void> {
    await this.currentProducer();
    this.started = true;
  }

  commitPage(commit: PageCommit): Promise<CommitOutcome> {
    if (!this.started || this.producers.isClosing) {
      return Promise.reject(
        new RetriableError(
          'KAFKA_SINK_CLOSED',
          'the Kafka sink is not started or is closing; the page was not committed',
        ),
      );
    }
    return this.queue.offer(commit, new Date(this.clock.now()));
  }

  /** The producer to send with, built (once, shared by concurrent callers) when there is none. */
  private async currentProducer(): Promise<IdempotentProducer> {
    try {
      return await this.producers.acquire();
    } catch (error) {
      if (error instanceof ConnectorError) throw error;
      throw kafkaUnavailable('cannot connect the producer', error);
    }
  }

  /**
   * Sends what is queued (records, then the offsets), then disconnects. With `timeoutMs`, gives up waiting
   * after that long: pages not yet resolved are rejected (KAFKA_SINK_CLOSED); their offsets were not
   * written, so they are published again after a restart.
   */
  async close(timeoutMs?: number): Promise<void> {
    if (!(await this.producers.beginClose(this.queue.drained(), timeoutMs))) {
      const error = new RetriableError(
        'KAFKA_SINK_CLOSED',
        `the Kafka sink closed after ${timeoutMs} ms before this page's offset was written`,
      );
      const unsettled = [...this.sending, ...this.acknowledged.splice(0), ...this.queue.pages.splice(0)];
      for (const page of unsettled) page.reject(error); // a request still in flight settles them no more
    }
    await this.producers.close();
  }

  /** One request at a time: the queued pages' records with the acknowledged pages' offsets. */
  private async drain(queue: PendingPage[]): Promise<void> {
    while (queue.length > 0 || this.acknowledged.length > 0) {
      const group = queue.splice(
        0,
        groupSize(queue, this.options.maxBytesPerSend ?? Number.POSITIVE_INFINITY),
      );
      // Pages without records have nothing to wait for: their offsets go now, after the acknowledged ones.
      const offsetsOf = [...this.acknowledged.splice(0), ...group.filter((p) => !hasRecords(p.messages))];
      const recordsOf = group.filter((p) => hasRecords(p.messages));
      this.sending = [...offsetsOf, ...recordsOf];
      try {
        await this.send(recordsOf, offsetsOf);
      } catch (error) {
        this.settleFailed(this.sending, error);
        continue;
      } finally {
        this.sending = [];
      }
      countDiverted(
        this.options.metrics,
        offsetsOf.map((p) => p.messages),
      );
      settlePages(
        offsetsOf,
        commitOutcomes(
          offsetsOf.map((p) => p.at),
          { write: 'committed' },
        ),
      );
      this.acknowledged.push(...recordsOf);
    }
  }

  /**
   * A failed request: its pages' offsets were not written, which the rule (commit-outcome.ts) reads as
   * 'rejected' (committed again; records already acknowledged repeat, at least once). A fatal error, or the
   * sink closing meanwhile, rejects them instead: this sink writes nothing more.
   */
  private settleFailed(pages: readonly PendingPage[], error: unknown): void {
    if (!isRetriedFailure(error)) {
      for (const page of pages) page.reject(error as Error);
      return;
    }
    settlePages(
      pages,
      commitOutcomes(
        pages.map((p) => p.at),
        { write: 'aborted', reason: error },
      ),
    );
  }

  private async send(recordsOf: readonly PendingPage[], offsetsOf: readonly PendingPage[]): Promise<void> {
    const messages = [
      ...topicMessages(
        recordsOf.map((p) => p.messages),
        this.options.topics,
        { offsets: false },
      ),
      ...(offsetsOf.length > 0
        ? [{ topic: this.options.topics.offsets, messages: offsetsOf.map((p) => p.messages.offset) }]
        : []),
    ];
    const producer = await this.currentProducer();
    try {
      for (const part of chunkTopicMessages(
        messages,
        this.options.maxBytesPerSend ?? Number.POSITIVE_INFINITY,
      ))
        await producer.sendBatch({ topicMessages: part, acks: -1, compression: this.options.compression });
    } catch (error) {
      // The next request builds a new producer (see the module comment).
      void this.producers.discard(kafkaErrorTypes(error)[0] ?? 'SEND_FAILED', producer);
      const bug = programmerError(error);
      if (bug !== undefined) {
        // A bug, never retried as a failed send: the process stops (see onFatal).
        this.options.onFatal?.(bug);
        throw bug;
      }
      const refused = notPermittedError(error, 'the write', 'check the ACLs and kafka.* settings');
      if (refused !== undefined) throw refused;
      throw new RetriableError(
        'KAFKA_SEND_FAILED',
        `the page was not fully written (its offset was not stored): ${describeKafkaError(error)}`,
        {
          cause: error,
        },
      );
    }
  }
}
