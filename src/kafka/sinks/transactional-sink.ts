/**
 * Exactly-once RecordSink: each page's calls, dead letters and offset are written in one Kafka
 * transaction, so a read_committed consumer sees all of a page or none of it, and the stored offset
 * never runs ahead of (or behind) what was published.
 *
 * Group commit: kafkajs allows one open transaction per producer. Pages that arrive while a transaction
 * is in flight wait in a queue and all go into the next transaction (at most
 * `maxPagesPerTransaction` pages and about `maxBytesPerTransaction` bytes), so many locations pipeline
 * through one producer. Each caller's promise
 * settles with the transaction its page was in. The pages of a group that failed are committed alone until
 * each commits once, so a page that can never commit aborts only its own transactions, not every group it joins.
 *
 * Failures (each rejects every page of the affected transaction; nothing of it is visible):
 * - a send fails: the transaction is aborted, RetriableError KAFKA_TRANSACTION_ABORTED, and the producer
 *   is discarded and a new one initialised (metric producerRecreated): kafkajs would otherwise reuse the
 *   failed batch's sequence numbers and the broker refuse them (OUT_OF_ORDER_SEQUENCE_NUMBER);
 * - the commit (EndTxn) fails: the coordinator may or may not have committed. The producer is rebuilt,
 *   which settles the transaction, and the offsets topic then says which happened: the pages resolve
 *   (committed) or reject with KAFKA_TRANSACTION_ABORTED, so the RecordSink contract holds, or with
 *   KAFKA_COMMIT_OUTCOME_UNKNOWN when the offsets cannot tell (see settleUnknownCommit);
 * - fenced (INVALID_PRODUCER_EPOCH; kafkajs 2.2.4 has no PRODUCER_FENCED): either the coordinator aborted
 *   our transaction for its age, or another instance with the same connector name initialised the id;
 * - authorization or configuration errors (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...): fatal
 *   (KAFKA_NOT_PERMITTED), `onFatal` is called;
 * - a programmer error (TypeError, RangeError, an illegal producer transition): fatal (SINK_PROGRAMMER_ERROR),
 *   `onFatal` is called and the process exits, so a supervisor restarts it (distributed mode: the group
 *   moves its partitions). Retrying a bug would only repeat it, and standing still would stop every location
 *   of the group for good.
 *
 * Never re-initialising an id this sink may have lost: every producer initialisation after the first
 * (any rebuild above, a settle, an on-demand build while closing) runs InitProducerId, which fences whoever
 * holds the id. A sink that was paused or cut off cannot know whether a newer writer took the id meanwhile,
 * and the transaction's age cannot tell it either (a pause outlasts any timeout). So every re-initialisation
 * first passes `beforeRebuild`:
 * - single mode: `instances.alone()` must show, from Kafka's own membership of `<name>-instances`, that no
 *   other instance is running (a newer instance joins that group before it initialises its producer). If
 *   another one is, this sink stands down for good: FatalError KAFKA_FENCED_BY_ANOTHER_INSTANCE, `onFatal`
 *   (the runtime then stands by, not ready), and every later commitPage rejects with it. The newest instance
 *   wins and is never fenced back. When the membership cannot be read, nothing is built now (retriable) and
 *   the next transaction asks again. A FencingBudget still bounds rebuilds after fencings.
 * - distributed mode (option `onTakenOver`): never. Any loss of the producer (a fencing, an unknown commit
 *   outcome, a failed send) ends the sink like a fencing: no producer is built again, the pages reject with
 *   the RetriableError KAFKA_PARTITION_TAKEN_OVER (their locations are not stopped), and `onTakenOver` is
 *   called: the instance drops that partition, and takes it again only through the group (a fresh sink
 *   whose initialisation fences no newer owner, since the group gave the partition to this instance).
 *
 * Pages of an older producer: a page carries the sink generation its starting offset was read under
 * (PageCommit.generation). A page queued before a re-initialisation is refused (RetriableError
 * KAFKA_PAGE_FROM_OLD_PRODUCER, nothing visible) instead of being committed under the new epoch: its
 * location reloads what is stored and prepares the page again.
 * The producer's build, discard, standing down and close are the shared ProducerLifecycle's
 * (producer-lifecycle.ts); this file is how a page is written.
 */
import { Partitioners, type CompressionTypes, type ProducerConfig, type Transaction } from 'kafkajs';
import { ConnectorError, FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { OffsetStore, PageCommit, RecordSink } from '../../sync/ports.js';
import {
  describeKafkaError,
  fatalKafkaErrorType,
  isFencedError,
  isProgrammerError,
  kafkaErrorTypes,
} from '../client/kafka-errors.js';
import {
  chunkTopicMessages,
  countDiverted,
  topicMessages,
  type CallEncoder,
  type PageMessages,
  type SinkTopics,
} from '../records/page-messages.js';
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
  /**
   * Single mode: whether this instance is the only one running (see the module comment). Unset in single
   * mode: the sink never re-initialises its producer; after any loss it stands down.
   */
  instances?: InstanceCheck;
  /** Distributed mode: fencing means the partition was taken over; called once (see the module comment). */
  onTakenOver?: () => void;
  /** Where transaction ages and record timestamps are read (default: the system clock). */
  clock?: Clock;
}

/** The transactional id of a connector: one per connector name, so two instances of one name fence each other. */
export function transactionalIdFor(connectorName: string): string {
  return `calls-connector.${connectorName}`;
}

/** Kafka's word on which instances of a connector run (kafka/group/instance-presence.ts implements it). */
export interface InstanceCheck {
  /**
   * Resolves true when Kafka's group membership shows that no other instance of this connector runs, false
   * when another one does; rejects when it cannot tell now (Kafka unavailable, the group rebalancing too long).
   */
  alone(): Promise<boolean>;
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
  /** Locations whose last group failed: their pages are committed alone until one commits (nextGroupSize). */
  private readonly suspects = new Set<string>();
  /** When the transaction in flight began (epoch ms), reported with a fencing. */
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
      beforeRebuild: () => this.mayReinitialise(),
      metrics: options.metrics,
      logger: this.log,
      clock: this.clock,
    });
  }

  /**
   * The rule of the module comment, run before every producer initialisation but the first: resolves when
   * this sink may initialise its transactional id again; otherwise stands down (throwing that error), or
   * throws a retriable error when it cannot tell yet.
   */
  private async mayReinitialise(): Promise<void> {
    if (this.options.onTakenOver !== undefined)
      throw this.takenOver(
        new Error('the producer was lost; the partition is taken again only through the group'),
      );
    let alone = false;
    if (this.options.instances !== undefined) {
      try {
        alone = await this.options.instances.alone();
      } catch (error) {
        throw new RetriableError(
          'KAFKA_INSTANCES_UNKNOWN',
          `cannot tell whether another instance of connector.name "${this.options.connectorName}" runs, so the producer is not initialised again yet: ${describeKafkaError(error)}`,
          { cause: error },
        );
      }
    }
    if (!alone)
      throw this.fencedByAnotherInstance(undefined, 'another instance is a member of the instances group');
  }

  private fencedByAnotherInstance(cause: unknown, why: string): FatalError {
    return this.fail(
      new FatalError(
        'KAFKA_FENCED_BY_ANOTHER_INSTANCE',
        `another instance with connector.name "${this.options.connectorName}" (transactional id ${this.options.transactionalId}) ` +
          `may hold the transactional id (${why}): the newest instance writes, this one stands by and writes nothing more. ` +
          `Stop this instance (a rolling restart does); to run both, give them different connector names.`,
        { cause, details: { transactionOpenMs: this.clock.now() - this.transactionStartedAt } },
      ),
    );
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
        new RetriableError('KAFKA_SINK_CLOSED', 'the Kafka sink is closing; the page was not committed', {
          details: { sinkEnded: true },
        }),
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
        { details: { sinkEnded: true } },
      );
      for (const page of this.queue.pages.splice(0)) page.reject(error);
      this.log.warn({ timeoutMs }, 'closing the sink timed out; the open transaction is left to be aborted');
    }
    await this.producers.close();
  }

  private async drain(queue: PendingPage[]): Promise<void> {
    while (queue.length > 0 && this.fatal === undefined) {
      const taken = queue.splice(0, this.nextGroupSize(queue));
      let group: PendingPage[];
      try {
        group = await this.admit(taken);
      } catch (error) {
        // Nothing was sent: the failure cannot be a commit ('committed' is a commit stage's answer only). The
        // rebuild rule's own answer (stood down, or cannot tell yet) is final for this group: asking again
        // at once would only wait again.
        const failure =
          error instanceof ConnectorError
            ? (this.fatal ?? error)
            : await this.recover(new TransactionFailure('begin', error), []);
        this.options.metrics.transactions.inc({ result: 'abort' });
        for (const page of taken)
          page.reject(failure === 'committed' ? new TransactionFailure('begin', error) : failure);
        continue;
      }
      if (group.length === 0) continue;
      const pages = group.map((p) => p.messages);
      try {
        await this.commitGroup(pages);
      } catch (error) {
        const failure = await this.recover(error, pages);
        if (failure !== 'committed') {
          this.options.metrics.transactions.inc({ result: 'abort' });
          // Until each of them commits, these locations' pages go alone: a page that can never commit
          // (say, an offset record over the broker's limit) then aborts only its own transactions.
          if (group.length > 1) for (const page of group) this.suspects.add(page.messages.locationUid);
          for (const page of group) page.reject(failure);
          continue;
        }
      }
      this.options.metrics.transactions.inc({ result: 'commit' });
      countDiverted(this.options.metrics, pages);
      for (const page of group) {
        this.suspects.delete(page.messages.locationUid);
        page.resolve();
      }
    }
    if (this.fatal !== undefined) for (const page of queue.splice(0)) page.reject(this.fatal);
  }

  /**
   * How many pages from the head of the queue the next transaction takes (groupSize), except that a page
   * of a suspect location (one whose group failed) goes alone, and a group stops before one.
   */
  private nextGroupSize(queue: readonly PendingPage[]): number {
    const size = groupSize(queue, this.options.maxBytesPerTransaction, this.options.maxPagesPerTransaction);
    if (this.suspects.size === 0) return size;
    const first = queue.findIndex((p, i) => i < size && this.suspects.has(p.messages.locationUid));
    if (first === -1) return size;
    return first === 0 ? 1 : first;
  }

  /**
   * Makes sure a producer is ready, then refuses the pages prepared under an older one (see the module
   * comment) and returns the rest, in order.
   */
  private async admit(pages: PendingPage[]): Promise<PendingPage[]> {
    await this.producers.acquire();
    const current = this.producers.generation;
    const admitted: PendingPage[] = [];
    for (const page of pages) {
      if (page.generation === undefined || page.generation === current) {
        admitted.push(page);
        continue;
      }
      this.options.metrics.transactions.inc({ result: 'abort' });
      page.reject(
        new RetriableError(
          'KAFKA_PAGE_FROM_OLD_PRODUCER',
          `the page was prepared under producer generation ${page.generation}, and the producer was initialised again since (generation ${current}): nothing of it was written; its location reloads its stored offset`,
          { details: { pageGeneration: page.generation, generation: current } },
        ),
      );
    }
    return admitted;
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
      // A bug, not Kafka's answer: retrying would repeat it, and the transaction's state is unknown.
      return this.fail(
        new FatalError(
          'SINK_PROGRAMMER_ERROR',
          `the Kafka sink hit a programmer error; the process stops so that a supervisor restarts it: ${failure.message}`,
          { cause: original },
        ),
      );
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

    // Distributed mode: any loss of the producer hands the partition back (see the module comment).
    if (this.options.onTakenOver !== undefined) return this.takenOver(original);
    if (this.fatal !== undefined) return this.fatal;
    if (isFencedError(original)) {
      if (!this.fencing.allowRebuild(this.clock.now()))
        return this.fencedByAnotherInstance(original, 'fenced too often within kafka.fencedWindowMs');
      // Our own transaction timed out, or a newer instance took the id: mayReinitialise tells which.
      await this.rebuildProducer('INVALID_PRODUCER_EPOCH');
      if (this.fatal !== undefined) return this.fatal;
      return new RetriableError(
        'KAFKA_PRODUCER_FENCED',
        `the producer was fenced; it is initialised again only while Kafka shows no other instance running (the transaction outlived kafka.transactionTimeoutMs); nothing of the transaction is visible: ${failure.message}`,
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
    if (this.fatal !== undefined) return this.fatal;
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
      this.takenOverError = new RetriableError('KAFKA_PARTITION_TAKEN_OVER', message, {
        cause,
        details: { sinkEnded: true },
      });
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
