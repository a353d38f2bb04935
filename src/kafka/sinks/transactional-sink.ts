/**
 * Exactly-once RecordSink: each page's calls, dead letters and offset are written in one Kafka transaction, so a
 * read_committed consumer sees all of a page or none of it, and the stored offset never runs ahead of (or behind)
 * what was published. This file sequences the parts, as Kafka Connect's exactly-once task does: who may initialise
 * the transactional id (init-rule.ts), one transaction's I/O (transactional-producer.ts), what a failure means
 * (sink-errors.ts), the read-back after a failed write (settlement.ts), how the sink ends for good (sink-end.ts),
 * and the producer's build, discard and close (producer-lifecycle.ts).
 *
 * Group commit: kafkajs allows one open transaction per producer. Pages that arrive while a transaction is in
 * flight wait in a queue and all go into the next transaction (at most `maxPagesPerTransaction` pages and about
 * `maxBytesPerTransaction` bytes), so many locations pipeline through one producer. Each caller's promise settles
 * with the transaction its page was in. The pages of a group that failed are committed alone until each commits
 * once, so a page that can never commit aborts only its own transactions, not every group it joins.
 *
 * Outcomes: every page resolves to what the one rule (sync/location/commit-outcome.ts) makes of the facts this sink
 * reports; the sink decides nothing itself. After a failed send, begin or fencing the producer is discarded and a
 * new one initialised when the init rule allows (metric producerRecreated): kafkajs would otherwise reuse the
 * failed batch's sequence numbers and the broker refuse them (OUT_OF_ORDER_SEQUENCE_NUMBER). After a failed
 * commit (EndTxn) it is discarded, and settlement builds the next one, which settles the transaction.
 *
 * Pages of an older producer: a page carries the sink generation its starting offset was read under
 * (PageCommit.generation). A page queued before a re-initialisation is not written under the new epoch (facts:
 * aborted, KAFKA_PAGE_FROM_OLD_PRODUCER): its location's stored offset is read, and the rule answers rejected
 * (nothing moved: the location commits it again under the current generation) or superseded (another writer
 * stored a newer offset: the location continues from it). A fatal failure, and a sink closing or taken over,
 * reject the pages instead (RecordSink).
 */
import type { CompressionTypes, ProducerConfig } from 'kafkajs';
import { ConnectorError, FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { CommitOutcome, PageCommit, RecordSink } from '../../sync/ports.js';
import { systemClock, type Clock } from '../../time/clock.js';
import { describeKafkaError } from '../client/kafka-errors.js';
import {
  countDiverted,
  type CallEncoder,
  type DivertedMetrics,
  type SignalDoneMessage,
  type SinkTopics,
} from '../records/page-messages.js';
import type { PublishedCheck } from './commit-witnesses.js';
import { InitRule, type FencingBudgetOptions, type InstanceCheck } from './init-rule.js';
import { groupSize, PageQueue, type PendingPage } from './page-queue.js';
import { ProducerLifecycle, type ProducerLifecycleOptions } from './producer-lifecycle.js';
import {
  committed,
  Settler,
  type Failure,
  type LocationOffsetReader,
  type SettlementMetrics,
} from './settlement.js';
import { SinkEnd } from './sink-end.js';
import {
  fromOldProducer,
  isRetriedFailure,
  readTransactionFailure,
  sinkProducerConfig,
  transactionalStartError,
} from './sink-errors.js';
import {
  initTransactions,
  TransactionFailure,
  TransactionWriter,
  type TransactionalProducer,
  type TransactionMetrics,
} from './transactional-producer.js';

/** The metrics the exactly-once sink updates. */
export type TransactionalSinkMetrics = Pick<ConnectorMetrics, 'transactions'> &
  ProducerLifecycleOptions<TransactionalProducer>['metrics'] &
  TransactionMetrics &
  SettlementMetrics &
  DivertedMetrics;

export interface TransactionalSinkOptions {
  /** Builds producers: a kafkajs `Kafka` client (a seam for unit tests). */
  kafka: { producer(config: ProducerConfig): TransactionalProducer };
  encoder: CallEncoder;
  topics: SinkTopics;
  connectorName: string;
  /** The `done` outcome a page completing a signal writes in its transaction (needs `topics.signals`). */
  signalDone?: SignalDoneMessage;
  /** Named by transactional-id.ts: a second instance (single mode) or a partition's new owner fences this one. */
  transactionalId: string;
  transactionTimeoutMs: number;
  maxPagesPerTransaction: number;
  /** A transaction takes further pages only while its messages stay under this many bytes. */
  maxBytesPerTransaction: number;
  /** Codec of the record batches (kafka.compression); default none. */
  compression?: CompressionTypes;
  fencing: FencingBudgetOptions;
  /** What a failed commit left: the stored offsets, the visibility of its records, partition counts (settlement.ts). */
  offsetStore: LocationOffsetReader;
  published?: PublishedCheck;
  partitionCount?: (topic: string) => Promise<number>;
  metrics: TransactionalSinkMetrics;
  logger: Logger;
  /** Called once when the sink gives up for good; the process should shut down. */
  onFatal?: (error: FatalError) => void;
  /** Single mode: whether this instance is the newest one running (init-rule.ts). Unset: never re-initialises. */
  instances?: InstanceCheck;
  /** Distributed mode: fencing means the partition was taken over; called once (see the module comment). */
  onTakenOver?: () => void;
  /** Where transaction ages and record timestamps are read (default: the system clock). */
  clock?: Clock;
}

export class TransactionalRecordSink implements RecordSink {
  private readonly producers: ProducerLifecycle<TransactionalProducer>;
  private readonly queue: PageQueue;
  private readonly initRule: InitRule;
  private readonly end: SinkEnd;
  private readonly writer: TransactionWriter;
  private readonly settler: Settler;
  /** Locations whose last group failed: their pages are committed alone until one commits (nextGroupSize). */
  private readonly suspects = new Set<string>();
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(private readonly options: TransactionalSinkOptions) {
    const { connectorName, transactionalId, maxPagesPerTransaction, topics, metrics } = options;
    if (!Number.isInteger(maxPagesPerTransaction) || maxPagesPerTransaction < 1)
      throw new RangeError('maxPagesPerTransaction must be a positive integer');
    if (transactionalId.length === 0) throw new RangeError('transactionalId must not be empty');
    const distributed = options.onTakenOver !== undefined;
    this.initRule = new InitRule({ ...options, distributed });
    const clock = (this.clock = options.clock ?? systemClock);
    const logger = (this.log = options.logger.child({ component: 'transactional-sink', transactionalId }));
    const parts = { metrics, logger, clock };
    this.queue = new PageQueue({ ...options, drain: (queue) => this.drain(queue) });
    this.producers = new ProducerLifecycle({
      build: () => options.kafka.producer(sinkProducerConfig(options)),
      prepare: initTransactions,
      beforeBuild: (rebuild) => this.mayInitialise(rebuild),
      ...parts,
    });
    this.end = new SinkEnd({
      ...{ producers: this.producers, connectorName, transactionalId, ...parts },
      ...{ onFatal: options.onFatal, onTakenOver: options.onTakenOver },
      transactionStartedAt: () => this.writer.startedAt,
    });
    this.writer = new TransactionWriter({ ...options, ...parts });
    this.settler = new Settler({
      ...{ producers: this.producers, offsetStore: options.offsetStore, topics, ...parts },
      ...{ published: options.published, partitionCount: options.partitionCount },
      fatal: () => this.fatal,
      fail: (error) => this.end.fail(error),
      requeue: (page) => this.queue.requeue(page),
    });
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
      throw transactionalStartError(error, this.options.transactionalId);
    }
  }

  generation(): number {
    return this.producers.generation;
  }

  commitPage(commit: PageCommit): Promise<CommitOutcome> {
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

  private get fatal(): ConnectorError | undefined {
    return this.end.error;
  }

  /** The init rule, run before every producer initialisation: throws to refuse (init-rule.ts). */
  private async mayInitialise(rebuild: boolean): Promise<void> {
    const verdict = await this.initRule.beforeInitialising(rebuild);
    if (verdict.kind === 'taken-over')
      throw this.end.takenOver(
        new Error('the producer was lost; the partition is taken again only through the group'),
      );
    if (verdict.kind === 'stand-down') throw this.end.standDown(undefined, verdict.why);
  }

  private async drain(queue: PendingPage[]): Promise<void> {
    while (queue.length > 0 && this.fatal === undefined) {
      const taken = queue.splice(0, this.nextGroupSize(queue));
      let admitted: { group: PendingPage[]; refused: PendingPage[] };
      try {
        admitted = await this.admit(taken);
      } catch (error) {
        // Nothing was sent. The rebuild rule's own answer (stood down, or cannot tell yet) is final for this
        // group: asking again at once would only wait again.
        const failure =
          error instanceof ConnectorError
            ? this.failureOf(error)
            : await this.recover(new TransactionFailure('begin', error));
        const settled = await this.settler.settle(taken, failure);
        this.options.metrics.transactions.inc({ result: 'abort' });
        settled();
        continue;
      }
      const { group, refused } = admitted;
      if (refused.length > 0) {
        const reason = fromOldProducer(
          refused.map((p) => p.generation),
          this.producers.generation,
        );
        const settled = await this.settler.settle(refused, { write: 'aborted', reason }, true);
        this.options.metrics.transactions.inc({ result: 'abort' }, refused.length);
        settled();
      }
      if (group.length === 0) continue;
      const pages = group.map((p) => p.messages);
      let settled = committed(group);
      try {
        await this.writer.write(() => this.producers.acquire(), pages);
      } catch (error) {
        const failure = await this.recover(error);
        settled = await this.settler.settle(group, failure);
        if (!settled.stored) {
          this.options.metrics.transactions.inc({ result: 'abort' });
          // Until each of them commits, these locations' pages go alone: a page that can never commit
          // (say, an offset record over the broker's limit) then aborts only its own transactions.
          if (group.length > 1) for (const page of group) this.suspects.add(page.messages.locationUid);
          settled();
          continue;
        }
      }
      this.options.metrics.transactions.inc({ result: 'commit' });
      countDiverted(this.options.metrics, pages);
      for (const page of group) this.suspects.delete(page.messages.locationUid);
      settled();
    }
    if (this.fatal !== undefined) for (const page of queue.splice(0)) page.reject(this.fatal);
  }

  /** A ConnectorError met before anything was sent: the sink's own answer, as a failure of the group. */
  private failureOf(error: ConnectorError): Failure {
    if (this.fatal !== undefined) return { reject: this.fatal };
    // Cannot tell yet whether another instance runs: nothing was built, nothing written.
    if (isRetriedFailure(error)) return { write: 'aborted', reason: error };
    return { reject: error };
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
   * Makes sure a producer is ready, then separates the pages prepared under an older one (see the module
   * comment) from the rest, in order.
   */
  private async admit(pages: PendingPage[]): Promise<{ group: PendingPage[]; refused: PendingPage[] }> {
    await this.producers.acquire();
    const current = this.producers.generation;
    const group: PendingPage[] = [];
    const refused: PendingPage[] = [];
    for (const page of pages)
      (page.generation === undefined || page.generation === current ? group : refused).push(page);
    return { group, refused };
  }

  /**
   * Acts on what a failed transaction means (sink-errors.ts, readTransactionFailure) and repairs the producer:
   * the facts for the rule, or the error that rejects the pages when the sink writes nothing more.
   */
  private async recover(error: unknown): Promise<Failure> {
    const failure = error instanceof TransactionFailure ? error : new TransactionFailure('begin', error);
    const reading = readTransactionFailure(failure.stage, failure.original);
    if (reading.kind === 'fatal') return { reject: this.end.fail(reading.error) };
    // Distributed mode: any loss of the producer hands the partition back (see the module comment).
    if (this.options.onTakenOver !== undefined) return { reject: this.end.takenOver(failure.original) };
    if (this.fatal !== undefined) return { reject: this.fatal };
    if (reading.kind === 'fenced') {
      // Our own transaction timed out, or a newer instance took the id: the init rule tells which.
      const verdict = this.initRule.afterFencing(this.clock.now());
      if (verdict.kind === 'stand-down') return { reject: this.end.standDown(failure.original, verdict.why) };
    }
    if (reading.kind === 'unknown') {
      // EndTxn failed (timeout, coordinator moved...): settlement rebuilds the producer, which completes or
      // aborts the transaction, and reads what it left.
      this.log.warn(
        { code: reading.code },
        'committing failed with an unknown outcome; rebuilding the producer to settle it',
      );
      await this.producers.discard(reading.code);
      return {
        write: 'unknown',
        witnesses: failure.witnesses,
        firsts: failure.firsts,
        reason: reading.reason,
      };
    }
    // Even after a clean abort the producer is rebuilt: kafkajs keeps the sequence numbers of the failed
    // batch, and the broker then refuses the next transaction with OUT_OF_ORDER_SEQUENCE_NUMBER (the
    // Java client bumps the epoch instead, KIP-360; kafkajs cannot).
    await this.rebuildProducer(reading.code);
    if (this.fatal !== undefined) return { reject: this.fatal };
    // A failed send may have left records (its answer lost): where the sends that answered began, for the heal.
    if (failure.stage === 'send') return { write: 'aborted', reason: reading.reason, firsts: failure.firsts };
    return { write: 'aborted', reason: reading.reason };
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
}
