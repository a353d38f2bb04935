/**
 * One transaction's I/O for the exactly-once sink, in the shape of kafkajs's `eosManager`: begin, send the pages'
 * records in chunks, commit; and when a stage fails, which one (`TransactionFailure`), with where the records
 * landed (the witnesses a commit of unknown outcome is judged by, commit-witnesses.ts). It knows nothing of what a
 * failure means for the pages or the producer: the sink decides that (transactional-sink.ts, recover).
 */
import type { CompressionTypes, Transaction } from 'kafkajs';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { Clock } from '../../time/clock.js';
import { describeKafkaError } from '../client/kafka-errors.js';
import {
  chunkTopicMessages,
  topicMessages,
  type PageMessages,
  type SinkTopics,
} from '../records/page-messages.js';
import { Witnesses, type RecordPosition } from './commit-witnesses.js';

/** The part of a kafkajs transaction the sink uses. */
export type SinkTransaction = Pick<Transaction, 'sendBatch' | 'commit' | 'abort'>;

/** The part of a kafkajs producer the sink uses; kafkajs' Producer satisfies it. */
export interface TransactionalProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  transaction(): Promise<SinkTransaction>;
}

/** The metric one transaction updates. */
export type TransactionMetrics = Pick<ConnectorMetrics, 'transactionCommitDuration'>;

/** The stage of a transaction that failed: getting a producer and beginning, sending, or committing (EndTxn). */
export type Stage = 'begin' | 'send' | 'commit';

/** A failed transaction: the stage, Kafka's error (`original`), and, for a commit, where its records landed. */
export class TransactionFailure extends Error {
  constructor(
    readonly stage: Stage,
    readonly original: unknown,
    /** A commit's: where its first call or dead letter on each partition landed (see settlement.ts). */
    readonly witnesses: readonly RecordPosition[] = [],
    /** A send's or a commit's: where it began on every partition a send answered, the offsets topic's included. */
    readonly firsts: readonly RecordPosition[] = [],
  ) {
    super(describeKafkaError(original), { cause: original });
  }
}

/**
 * Makes a built producer's transactions ready: connects, and initialises them (kafkajs runs InitProducerId on the
 * first transaction(); nothing is added, so abort() sends no EndTxn). This fences an older producer of the id.
 */
export async function initTransactions(producer: TransactionalProducer): Promise<void> {
  await producer.connect();
  const init = await producer.transaction();
  await init.abort();
}

export interface TransactionWriterOptions {
  topics: SinkTopics;
  /** Bytes per send: a larger page goes in several sends of its one transaction (under max.message.bytes). */
  maxBytesPerTransaction: number;
  compression?: CompressionTypes | undefined;
  metrics: TransactionMetrics;
  logger: Logger;
  clock: Clock;
}

export class TransactionWriter {
  private began = 0;

  constructor(private readonly options: TransactionWriterOptions) {}

  /** When the transaction in flight (or the last one) began, epoch ms: reported with a fencing. */
  get startedAt(): number {
    return this.began;
  }

  /**
   * Writes `pages` in one transaction on the producer `acquire` gives. Rejects with a TransactionFailure naming
   * the stage; after a failed send the transaction is aborted first (best effort).
   */
  async write(acquire: () => Promise<TransactionalProducer>, pages: readonly PageMessages[]): Promise<void> {
    let transaction: SinkTransaction;
    try {
      const producer = await acquire();
      this.began = this.options.clock.now();
      transaction = await producer.transaction();
    } catch (error) {
      throw new TransactionFailure('begin', error);
    }
    const witnesses = new Witnesses(this.options.topics.offsets);
    try {
      // In parts of at most maxBytesPerTransaction (kept under max.message.bytes): one page can be larger.
      const parts = chunkTopicMessages(
        topicMessages(pages, this.options.topics),
        this.options.maxBytesPerTransaction,
      );
      for (const part of parts) {
        const answers = await transaction.sendBatch({
          topicMessages: part,
          acks: -1,
          compression: this.options.compression,
        });
        witnesses.add(answers);
      }
    } catch (error) {
      // Best effort: the rebuild that follows aborts it anyway, this just releases it sooner.
      await this.tryAbort(transaction);
      throw new TransactionFailure('send', error, [], witnesses.firsts());
    }
    try {
      const commitTimer = this.options.metrics.transactionCommitDuration.startTimer();
      await transaction.commit();
      commitTimer();
    } catch (error) {
      throw new TransactionFailure('commit', error, witnesses.positions(), witnesses.firsts());
    }
  }

  private async tryAbort(transaction: SinkTransaction): Promise<void> {
    try {
      await transaction.abort();
    } catch (error) {
      this.options.logger.debug(
        { err: describeKafkaError(error) },
        'aborting a failed transaction failed too',
      );
    }
  }
}
