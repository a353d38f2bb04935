/**
 * Exactly-once RecordSink: each page's calls, dead letters and offset are written in one Kafka
 * transaction, so a read_committed consumer sees all of a page or none of it, and the stored offset
 * never runs ahead of (or behind) what was published.
 *
 * Group commit: kafkajs allows one open transaction per producer. Pages that arrive while a transaction
 * is in flight wait in a queue and all go into the next transaction (at most
 * `maxPagesPerTransaction` pages and about `maxBytesPerTransaction` bytes), so many locations pipeline
 * through one producer. Each caller's promise
 * settles with the transaction its page was in.
 *
 * Failures (each rejects every page of the affected transaction; nothing of it is visible):
 * - a send fails: the transaction is aborted, RetriableError KAFKA_TRANSACTION_ABORTED, and the producer
 *   is discarded and a new one initialised (metric producerRecreated): kafkajs would otherwise reuse the
 *   failed batch's sequence numbers and the broker refuse them (OUT_OF_ORDER_SEQUENCE_NUMBER);
 * - the commit (EndTxn) fails: the coordinator may or may not have committed. The producer is rebuilt,
 *   which settles the transaction, and the offsets topic then says which happened: the pages resolve
 *   (committed) or reject with KAFKA_TRANSACTION_ABORTED, so the RecordSink contract holds, or with
 *   KAFKA_COMMIT_OUTCOME_UNKNOWN when the offsets cannot tell (see settleUnknownCommit);
 * - fenced (INVALID_PRODUCER_EPOCH; kafkajs 2.2.4 has no PRODUCER_FENCED) while the transaction was
 *   younger than `transactionTimeoutMs`: a newer instance with the same connector name initialised the
 *   transactional id. The newest instance wins: this sink never builds a producer again (that would fence
 *   the newer one back, and the two would take turns fencing each other), FatalError
 *   KAFKA_FENCED_BY_ANOTHER_INSTANCE, `onFatal` is called (the runtime then stands by, not ready), and
 *   every later commitPage rejects with it;
 * - fenced after the transaction was open for `transactionTimeoutMs` or more: the coordinator aborted it
 *   for its age. The producer is discarded and rebuilt the same way, RetriableError KAFKA_PRODUCER_FENCED,
 *   unless the fencing budget is spent (see FencingBudget): then the fatal error above;
 * - authorization or configuration errors (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...): fatal likewise.
 *
 * In `connector.mode: distributed` (option `onTakenOver`) the transactional id is one partition's of the
 * offsets topic, and any fencing means the partition now has another owner (a rebalance this instance has
 * not seen yet, or it was paused past its session). The sink then ends like a fenced single-mode sink (no
 * producer is ever built again, nothing more is written) but with the RetriableError
 * KAFKA_PARTITION_TAKEN_OVER, so its locations are not stopped, and it calls `onTakenOver` instead of
 * `onFatal`: the instance drops that partition, never the whole process.
 * The producer's build, discard, standing down and close are the shared ProducerLifecycle's
 * (producer-lifecycle.ts); this file is how a page is written.
 */
import { Partitioners, type CompressionTypes, type ProducerConfig, type Transaction } from 'kafkajs';
import { FatalError, RetriableError, type ConnectorError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { OffsetStore, PageCommit, RecordSink } from '../../sync/ports.js';
import {
  describeKafkaError,
  fatalKafkaErrorType,
  isFencedError,
  isProgrammerError,
  kafkaErrorTypes,
} from '../kafka-errors.js';
import {
  chunkTopicMessages,
  countDiverted,
  topicMessages,
  type CallEncoder,
  type PageMessages,
  type SinkTopics,
} from '../page-messages.js';
import { encodeOffsetValue } from '../offsets/offset-codec.js';
import { FencingBudget, type FencingBudgetOptions } from './fencing-budget.js';
import { groupSize, hasRecords, PageQueue, type PendingPage } from './page-queue.js';
import { ProducerLifecycle } from './producer-lifecycle.js';
import { systemClock, type Clock } from '../../time/clock.js';

/** The part of a kafkajs transaction the sink uses. */
export type SinkTransaction = Pick<Transaction, 'sendBatch' | 'commit' | 'abort'>;

/** The part of a kafkajs producer the sink uses; kafkajs' Producer satisfies it. */
export interface TransactionalProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  transaction(): Promise<SinkTransaction>;
}

export interface TransactionalSinkOptions {
  /** Builds producers: a kafkajs `Kafka` client (a seam for unit tests). */
  kafka: { producer(config: ProducerConfig): TransactionalProducer };
  encoder: CallEncoder;
  topics: SinkTopics;
  connectorName: string;
  /** Derived from the connector name (see transactionalIdFor), so a second instance fences the first. */
  transactionalId: string;
  transactionTimeoutMs: number;
  maxPagesPerTransaction: number;
  /** A transaction takes further pages only while its messages stay under this many bytes. */
  maxBytesPerTransaction: number;
  /** Codec of the record batches (kafka.compression); default none. */
  compression?: CompressionTypes;
  fencing: FencingBudgetOptions;
  /** Reads the stored offsets, to learn whether a commit that reported failure took effect. */
  offsetStore: OffsetStore;
  metrics: ConnectorMetrics;
  logger: Logger;
  /** Called once when the sink gives up for good; the process should shut down. */
  onFatal?: (error: FatalError) => void;
  /** Distributed mode: fencing means the partition was taken over; called once (see the module comment). */
  onTakenOver?: () => void;
  /** Where transaction ages and record timestamps are read (default: the system clock). */
  clock?: Clock;
}

/** The transactional id of a connector: one per connector name, so two instances of one name fence each other. */
export function transactionalIdFor(connectorName: string): string {
  return `calls-connector.${connectorName}`;
}

type Stage = 'begin' | 'send' | 'commit';

class TransactionFailure extends Error {
  constructor(
    readonly stage: Stage,
    readonly original: unknown,
  ) {
    super(describeKafkaError(original), { cause: original });
  }
}

export class TransactionalRecordSink implements RecordSink {
  private readonly producers: ProducerLifecycle<TransactionalProducer>;
  private readonly queue: PageQueue;
  /** Distributed mode: set once the partition was taken over (see the module comment). */
  private takenOverError: RetriableError | undefined;
  private readonly fencing: FencingBudget;
  /** When the transaction in flight began (epoch ms), to tell a timed-out transaction from a newer instance. */
  private transactionStartedAt = 0;
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(private readonly options: TransactionalSinkOptions) {
    if (!Number.isInteger(options.maxPagesPerTransaction) || options.maxPagesPerTransaction < 1) {
      throw new RangeError('maxPagesPerTransaction must be a positive integer');
    }
    if (options.transactionalId.length === 0) throw new RangeError('transactionalId must not be empty');
    this.fencing = new FencingBudget(options.fencing);
    this.clock = options.clock ?? systemClock;
    this.queue = new PageQueue({
      encoder: options.encoder,
      connectorName: options.connectorName,
      drain: (queue) => this.drain(queue),
    });
    this.log = options.logger.child({
      component: 'transactional-sink',
      transactionalId: options.transactionalId,
    });
    this.producers = new ProducerLifecycle({
      build: () =>
        options.kafka.producer({
          transactionalId: options.transactionalId,
          idempotent: true,
          maxInFlightRequests: 1,
          transactionTimeout: options.transactionTimeoutMs,
          allowAutoTopicCreation: false,
          // murmur2 over the key bytes, as the Java client: Java and Streams consumers co-partition with us.
          createPartitioner: Partitioners.DefaultPartitioner,
        }),
      prepare: async (producer) => {
        await producer.connect();
        // kafkajs runs InitProducerId on the first transaction(); nothing is added, so abort() sends no EndTxn.
        const init = await producer.transaction();
        await init.abort();
      },
      metrics: options.metrics,
      logger: this.log,
      clock: this.clock,
    });
  }

  private get fatal(): ConnectorError | undefined {
    return this.takenOverError ?? this.producers.fatal;
  }

  /**
   * Creates the producer and initialises its transactions. This fences any older producer with the same
   * transactionalId and aborts a transaction such a producer left open, which would otherwise hold back
   * what read_committed readers of the offsets topic can see. Call it before loading offsets.
   */
  async start(): Promise<void> {
    try {
      await this.producers.acquire();
    } catch (error) {
      throw this.startError(error);
    }
  }

  generation(): number {
    return this.producers.generation;
  }

  commitPage(commit: PageCommit): Promise<void> {
    if (this.fatal !== undefined) return Promise.reject(this.fatal);
    if (this.producers.isClosing)
      return Promise.reject(
        new RetriableError('KAFKA_SINK_CLOSED', 'the Kafka sink is closing; the page was not committed'),
      );
    return this.queue.offer(commit, new Date(this.clock.now()));
  }

  /**
   * Commits what is queued, then disconnects. Pages offered after close() starts are rejected.
   * With `timeoutMs`, gives up waiting after that long (shutdown must be bounded): pages still queued
   * are rejected (KAFKA_SINK_CLOSED) and the producer is disconnected; a transaction still in flight is
   * then aborted by the coordinator after kafka.transactionTimeoutMs, or at once when the next instance
   * initialises its producer. Nothing half-written ever becomes visible.
   */
  async close(timeoutMs?: number): Promise<void> {
    if (!(await this.producers.beginClose(this.queue.drained(), timeoutMs))) {
      const error = new RetriableError(
        'KAFKA_SINK_CLOSED',
        `the Kafka sink closed after ${timeoutMs} ms before this page was committed`,
      );
      for (const page of this.queue.pages.splice(0)) page.reject(error);
      this.log.warn({ timeoutMs }, 'closing the sink timed out; the open transaction is left to be aborted');
    }
    await this.producers.close();
  }

  private async drain(queue: PendingPage[]): Promise<void> {
    while (queue.length > 0 && this.fatal === undefined) {
      const group = queue.splice(
        0,
        groupSize(queue, this.options.maxBytesPerTransaction, this.options.maxPagesPerTransaction),
      );
      const pages = group.map((p) => p.messages);
      try {
        await this.commitGroup(pages);
      } catch (error) {
        const failure = await this.recover(error, pages);
        if (failure !== 'committed') {
          this.options.metrics.transactions.inc({ result: 'abort' });
          for (const page of group) page.reject(failure);
          continue;
        }
      }
      this.options.metrics.transactions.inc({ result: 'commit' });
      countDiverted(this.options.metrics, pages);
      for (const page of group) page.resolve();
    }
    if (this.fatal !== undefined) for (const page of queue.splice(0)) page.reject(this.fatal);
  }

  private async commitGroup(pages: readonly PageMessages[]): Promise<void> {
    let transaction: SinkTransaction;
    try {
      const producer = await this.producers.acquire();
      this.transactionStartedAt = this.clock.now();
      transaction = await producer.transaction();
    } catch (error) {
      throw new TransactionFailure('begin', error);
    }
    try {
      // In parts of at most maxBytesPerTransaction (kept under max.message.bytes): one page can be larger.
      const parts = chunkTopicMessages(
        topicMessages(pages, this.options.topics),
        this.options.maxBytesPerTransaction,
      );
      for (const part of parts)
        await transaction.sendBatch({ topicMessages: part, acks: -1, compression: this.options.compression });
    } catch (error) {
      // Best effort: the rebuild that follows aborts it anyway, this just releases it sooner.
      await this.tryAbort(transaction);
      throw new TransactionFailure('send', error);
    }
    try {
      const commitTimer = this.options.metrics.transactionCommitDuration.startTimer();
      await transaction.commit();
      commitTimer();
    } catch (error) {
      throw new TransactionFailure('commit', error);
    }
  }

  private async tryAbort(transaction: SinkTransaction): Promise<void> {
    try {
      await transaction.abort();
    } catch (error) {
      this.log.debug({ err: describeKafkaError(error) }, 'aborting a failed transaction failed too');
    }
  }

  /**
   * Decides what a failed transaction means and repairs the producer. Returns the error to reject its
   * pages with, or 'committed' when a commit that reported failure had in fact taken effect.
   */
  private async recover(error: unknown, pages: readonly PageMessages[]): Promise<Error | 'committed'> {
    const failure = error instanceof TransactionFailure ? error : new TransactionFailure('begin', error);
    const original = failure.original;

    if (isProgrammerError(original)) {
      // A bug, not Kafka's answer: never retried as an aborted transaction. The producer is rebuilt all
      // the same, since the transaction was left in an unknown state.
      await this.rebuildProducer('PROGRAMMER_ERROR');
      return original;
    }

    const fatalType = fatalKafkaErrorType(original);
    if (fatalType !== undefined) {
      return this.fail(
        new FatalError(
          'KAFKA_NOT_PERMITTED',
          `Kafka refused the transaction (${fatalType}): check the ACLs and kafka.* settings. ${failure.message}`,
          {
            cause: original,
          },
        ),
      );
    }

    if (isFencedError(original) && this.options.onTakenOver !== undefined) return this.takenOver(original);
    if (isFencedError(original)) {
      const openMs = this.clock.now() - this.transactionStartedAt;
      if (openMs < this.options.transactionTimeoutMs || !this.fencing.allowRebuild(this.clock.now())) {
        return this.fail(
          new FatalError(
            'KAFKA_FENCED_BY_ANOTHER_INSTANCE',
            `another instance with connector.name "${this.options.connectorName}" (transactional id ${this.options.transactionalId}) ` +
              `started and took over: the newest instance writes, this one stands by and writes nothing more. ` +
              `Stop this instance (a rolling restart does); to run both, give them different connector names.`,
            { cause: original, details: { transactionOpenMs: openMs } },
          ),
        );
      }
      // The coordinator aborted a transaction older than transactionTimeoutMs: ours to rebuild.
      await this.rebuildProducer('INVALID_PRODUCER_EPOCH');
      return new RetriableError(
        'KAFKA_PRODUCER_FENCED',
        `the transaction outlived kafka.transactionTimeoutMs and was aborted; the producer has been rebuilt and nothing of the transaction is visible: ${failure.message}`,
        {
          cause: original,
        },
      );
    }

    if (failure.stage === 'commit') return this.settleUnknownCommit(failure, pages);

    // Even after a clean abort the producer is rebuilt: kafkajs keeps the sequence numbers of the failed
    // batch, and the broker then refuses the next transaction with OUT_OF_ORDER_SEQUENCE_NUMBER (the
    // Java client bumps the epoch instead, KIP-360; kafkajs cannot).
    await this.rebuildProducer(
      kafkaErrorTypes(original)[0] ?? (failure.stage === 'begin' ? 'BEGIN_FAILED' : 'SEND_FAILED'),
    );
    return new RetriableError(
      'KAFKA_TRANSACTION_ABORTED',
      `the transaction was not committed; nothing of it is visible: ${failure.message}`,
      {
        cause: original,
      },
    );
  }

  /**
   * EndTxn failed (timeout, coordinator moved...): the coordinator may or may not have committed. A new
   * producer's initialisation completes or aborts that transaction, after which the offsets topic tells
   * which: the transaction is atomic, so it committed exactly when every location's stored offset is the
   * one this group wrote. (A group whose pages all left their offsets as they were cannot be told apart:
   * when it holds records, its pages are rejected as KAFKA_COMMIT_OUTCOME_UNKNOWN and committed again,
   * repeating rather than losing them.) Without an answer
   * (Kafka down until close) the pages are rejected: after a restart the stored offsets are the truth.
   */
  private async settleUnknownCommit(
    failure: TransactionFailure,
    pages: readonly PageMessages[],
  ): Promise<Error | 'committed'> {
    const code = kafkaErrorTypes(failure.original)[0] ?? 'END_TXN_FAILED';
    this.log.warn(
      { code },
      'committing failed with an unknown outcome; rebuilding the producer to settle it',
    );
    await this.producers.discard(code);
    for (let attempt = 0; ; attempt += 1) {
      // After a timed-out close, settling would build a producer nobody disconnects: leave the outcome
      // to the next start (its producer initialisation settles the transaction).
      if (this.producers.state === 'closed' || (this.producers.isClosing && attempt > 0)) {
        return new RetriableError(
          'KAFKA_COMMIT_OUTCOME_UNKNOWN',
          `the sink closed before the outcome of a failed commit was known: ${failure.message}`,
          {
            cause: failure.original,
            details: { outcomeUnknown: true },
          },
        );
      }
      try {
        await this.producers.acquire();
        const stored = await this.options.offsetStore.loadAll();
        const lastOffsetByLocation = new Map(pages.map((p) => [p.locationUid, p.offset.value]));
        const committed = [...lastOffsetByLocation].every(([location, value]) => {
          const offset = stored.get(location);
          return offset !== undefined && encodeOffsetValue(offset) === value;
        });
        this.log.info({ committed }, 'settled the outcome of a failed commit');
        if (committed && pages.every((p) => !p.offsetChanged) && pages.some(hasRecords)) {
          // Every page left its offset as it was (e.g. only a dead letter without a uid): the stored
          // offsets are the same whether the transaction committed or not. Reported unknown, the pages
          // are committed again (their records may repeat) rather than possibly lost.
          return new RetriableError(
            'KAFKA_COMMIT_OUTCOME_UNKNOWN',
            `committing failed and the stored offsets cannot tell whether it took effect: ${failure.message}`,
            { cause: failure.original, details: { outcomeUnknown: true } },
          );
        }
        if (committed) return 'committed';
        return new RetriableError(
          'KAFKA_TRANSACTION_ABORTED',
          `committing the transaction failed and it was aborted; nothing of it is visible: ${failure.message}`,
          {
            cause: failure.original,
          },
        );
      } catch (error) {
        if (error instanceof FatalError) return this.fail(error);
        const fatalType = fatalKafkaErrorType(error);
        if (fatalType !== undefined) {
          return this.fail(
            new FatalError(
              'KAFKA_NOT_PERMITTED',
              `Kafka refused to initialise the producer (${fatalType}): check the ACLs`,
              {
                cause: error,
              },
            ),
          );
        }
        this.log.warn(
          { err: describeKafkaError(error), attempt },
          'cannot settle the failed commit yet; retrying',
        );
        // Ended early by close(): the next attempt then reports the outcome unknown.
        await this.clock
          .sleep(Math.min(30_000, 500 * 2 ** attempt), this.producers.closedSignal)
          .catch(() => undefined);
      }
    }
  }

  private takenOver(cause: unknown): ConnectorError {
    if (this.fatal === undefined) {
      const message =
        `another instance took over transactional id ${this.options.transactionalId}: its partition has a new owner, ` +
        `which writes its locations from now on; nothing of this transaction is visible`;
      this.takenOverError = new RetriableError('KAFKA_PARTITION_TAKEN_OVER', message, { cause });
      // The lifecycle stands down for good (no producer is built again); the pages see the retriable error.
      this.producers.fail(new FatalError('KAFKA_PARTITION_TAKEN_OVER', message, { cause }));
      this.log.warn(
        { code: 'KAFKA_PARTITION_TAKEN_OVER' },
        'fenced: the partition was taken over; writing nothing more',
      );
      this.options.onTakenOver?.();
    }
    return this.fatal ?? this.takenOverError!;
  }

  private fail(error: FatalError): FatalError {
    const first = this.producers.fail(error);
    if (first === error) {
      this.log.error({ code: error.code }, error.message);
      this.options.onFatal?.(error);
    }
    return first;
  }

  /**
   * Replaces the producer. Initialising the new one settles whatever the old one left (aborts an open
   * transaction, completes a commit the coordinator accepted), so offsets read afterwards are the truth.
   * When that fails too (Kafka down), the next transaction tries again.
   */
  private async rebuildProducer(code: string): Promise<void> {
    await this.producers.discard(code);
    if (this.producers.isClosing) return; // a page still queued during a graceful close builds it on demand
    try {
      await this.producers.acquire();
    } catch (error) {
      this.log.warn(
        { err: describeKafkaError(error) },
        'the new producer could not be initialised yet; the next transaction retries',
      );
    }
  }

  private startError(error: unknown): Error {
    const fatalType = fatalKafkaErrorType(error);
    if (fatalType !== undefined) {
      return new FatalError(
        'KAFKA_NOT_PERMITTED',
        `Kafka refused to initialise the transactional producer (${fatalType}): check the ACLs for transactional id ${this.options.transactionalId}`,
        {
          cause: error,
        },
      );
    }
    return new RetriableError(
      'KAFKA_UNAVAILABLE',
      `cannot initialise the transactional producer: ${describeKafkaError(error)}`,
      { cause: error },
    );
  }
}
