/**
 * Exactly-once RecordSink: each page's calls, dead letters and offset are written in one Kafka
 * transaction, so a read_committed consumer sees all of a page or none of it, and the stored offset
 * never runs ahead of (or behind) what was published.
 *
 * Group commit: kafkajs allows one open transaction per producer. Pages that arrive while a transaction
 * is in flight wait in a queue and all go into the next transaction (at most
 * `maxPagesPerTransaction`), so many locations pipeline through one producer. Each caller's promise
 * settles with the transaction its page was in.
 *
 * Failures (each rejects every page of the affected transaction; nothing of it is visible):
 * - a send fails: the transaction is aborted, RetriableError KAFKA_TRANSACTION_ABORTED, and the producer
 *   is discarded and a new one initialised (metric producerRecreated): kafkajs would otherwise reuse the
 *   failed batch's sequence numbers and the broker refuse them (OUT_OF_ORDER_SEQUENCE_NUMBER);
 * - the commit (EndTxn) fails: kafkajs leaves the producer stuck; rebuilt likewise. It is KAFKA_COMMIT_OUTCOME_UNKNOWN:
 *   the coordinator may have committed it. Initialising the new producer settles that transaction
 *   either way, so the caller must re-read its offset (OffsetStore.loadAll) before retrying;
 * - fenced (INVALID_PRODUCER_EPOCH; kafkajs 2.2.4 has no PRODUCER_FENCED): discarded and rebuilt the
 *   same way, RetriableError KAFKA_PRODUCER_FENCED, unless the fencing budget is spent (see
 *   FencingBudget): then FatalError KAFKA_FENCED_BY_ANOTHER_INSTANCE, `onFatal` is called, and every
 *   later commitPage rejects with it;
 * - authorization or configuration errors (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...): fatal likewise.
 */
import { Partitioners, type Kafka, type Producer, type Transaction } from 'kafkajs';
import { FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { PageCommit, RecordSink } from '../../sync/ports.js';
import { describeKafkaError, fatalKafkaErrorType, isFencedError, kafkaErrorTypes } from '../kafka-errors.js';
import {
  countCommitted,
  pageMessages,
  topicMessages,
  type CallEncoder,
  type PageMessages,
  type SinkTopics,
} from '../page-messages.js';
import { FencingBudget, type FencingBudgetOptions } from './fencing-budget.js';

export interface TransactionalSinkOptions {
  kafka: Kafka;
  encoder: CallEncoder;
  topics: SinkTopics;
  connectorName: string;
  /** Derived from the connector name (see transactionalIdFor), so a second instance fences the first. */
  transactionalId: string;
  transactionTimeoutMs: number;
  maxPagesPerTransaction: number;
  fencing: FencingBudgetOptions;
  metrics: ConnectorMetrics;
  logger: Logger;
  /** Called once when the sink gives up for good; the process should shut down. */
  onFatal?: (error: FatalError) => void;
  /** Epoch ms; injectable for tests. */
  now?: () => number;
}

/** The transactional id of a connector: one per connector name, so two instances of one name fence each other. */
export function transactionalIdFor(connectorName: string): string {
  return `calls-connector.${connectorName}`;
}

interface PendingPage {
  messages: PageMessages;
  resolve: () => void;
  reject: (error: Error) => void;
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
  private producer: Producer | undefined;
  private readonly queue: PendingPage[] = [];
  private draining: Promise<void> | undefined;
  private fatal: FatalError | undefined;
  private closing = false;
  private readonly fencing: FencingBudget;
  private readonly now: () => number;
  private readonly log: Logger;

  constructor(private readonly options: TransactionalSinkOptions) {
    if (!Number.isInteger(options.maxPagesPerTransaction) || options.maxPagesPerTransaction < 1) {
      throw new RangeError('maxPagesPerTransaction must be a positive integer');
    }
    if (options.transactionalId.length === 0) throw new RangeError('transactionalId must not be empty');
    this.fencing = new FencingBudget(options.fencing);
    this.now = options.now ?? Date.now;
    this.log = options.logger.child({
      component: 'transactional-sink',
      transactionalId: options.transactionalId,
    });
  }

  /**
   * Creates the producer and initialises its transactions. This fences any older producer with the same
   * transactionalId and aborts a transaction such a producer left open, which would otherwise hold back
   * what read_committed readers of the offsets topic can see. Call it before loading offsets.
   */
  async start(): Promise<void> {
    try {
      await this.initProducer();
    } catch (error) {
      throw this.startError(error);
    }
  }

  commitPage(commit: PageCommit): Promise<void> {
    if (this.fatal !== undefined) return Promise.reject(this.fatal);
    if (this.closing)
      return Promise.reject(
        new RetriableError('KAFKA_SINK_CLOSED', 'the Kafka sink is closing; the page was not committed'),
      );
    let messages: PageMessages;
    try {
      messages = pageMessages(commit, this.options.encoder, this.options.connectorName, new Date(this.now()));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ messages, resolve, reject });
      this.kick();
    });
  }

  /** Commits what is queued, then disconnects. Pages offered after close() starts are rejected. */
  async close(): Promise<void> {
    this.closing = true;
    while (this.draining !== undefined) await this.draining;
    await this.discardProducer();
  }

  private kick(): void {
    if (this.draining !== undefined) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      // A page queued after the loop's last check and before this callback still needs a transaction.
      if (this.queue.length > 0) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && this.fatal === undefined) {
      const group = this.queue.splice(0, this.options.maxPagesPerTransaction);
      const pages = group.map((p) => p.messages);
      try {
        await this.commitGroup(pages);
      } catch (error) {
        this.options.metrics.transactions.inc({ result: 'abort' });
        const failure = await this.recover(error);
        for (const page of group) page.reject(failure);
        continue;
      }
      this.options.metrics.transactions.inc({ result: 'commit' });
      countCommitted(this.options.metrics, pages);
      for (const page of group) page.resolve();
    }
    if (this.fatal !== undefined) for (const page of this.queue.splice(0)) page.reject(this.fatal);
  }

  private async commitGroup(pages: readonly PageMessages[]): Promise<void> {
    let transaction: Transaction;
    try {
      const producer = this.producer ?? (await this.initProducer());
      transaction = await producer.transaction();
    } catch (error) {
      throw new TransactionFailure('begin', error);
    }
    try {
      await transaction.sendBatch({ topicMessages: topicMessages(pages, this.options.topics), acks: -1 });
    } catch (error) {
      // Best effort: the rebuild that follows aborts it anyway, this just releases it sooner.
      await this.tryAbort(transaction);
      throw new TransactionFailure('send', error);
    }
    try {
      await transaction.commit();
    } catch (error) {
      throw new TransactionFailure('commit', error);
    }
  }

  private async tryAbort(transaction: Transaction): Promise<void> {
    try {
      await transaction.abort();
    } catch (error) {
      this.log.debug({ err: describeKafkaError(error) }, 'aborting a failed transaction failed too');
    }
  }

  /** Decides what a failed transaction means, repairs the producer if needed, and returns the error for its pages. */
  private async recover(error: unknown): Promise<Error> {
    const failure = error instanceof TransactionFailure ? error : new TransactionFailure('begin', error);
    const original = failure.original;

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

    if (isFencedError(original)) {
      if (!this.fencing.allowRebuild(this.now())) {
        return this.fail(
          new FatalError(
            'KAFKA_FENCED_BY_ANOTHER_INSTANCE',
            `the producer was fenced ${this.fencing.recent} times within ${this.options.fencing.windowMs} ms: another instance with connector.name ` +
              `"${this.options.connectorName}" (transactional id ${this.options.transactionalId}) is running. Stop one of them, or give them different connector names.`,
            { cause: original },
          ),
        );
      }
      await this.rebuildProducer('INVALID_PRODUCER_EPOCH');
      return new RetriableError(
        'KAFKA_PRODUCER_FENCED',
        `the producer was fenced and has been rebuilt; nothing of the transaction is visible: ${failure.message}`,
        {
          cause: original,
        },
      );
    }

    if (failure.stage === 'commit') {
      await this.rebuildProducer(kafkaErrorTypes(original)[0] ?? 'END_TXN_FAILED');
      return new RetriableError(
        'KAFKA_COMMIT_OUTCOME_UNKNOWN',
        `committing the transaction failed and may or may not have taken effect; re-read the stored offset before retrying: ${failure.message}`,
        { cause: original, details: { outcomeUnknown: true } },
      );
    }

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

  private fail(error: FatalError): FatalError {
    if (this.fatal === undefined) {
      this.fatal = error;
      this.log.error({ code: error.code }, error.message);
      void this.discardProducer();
      this.options.onFatal?.(error);
    }
    return this.fatal;
  }

  /**
   * Replaces the producer. Initialising the new one settles whatever the old one left (aborts an open
   * transaction, completes a commit the coordinator accepted), so offsets read afterwards are the truth.
   * When that fails too (Kafka down), the next transaction tries again.
   */
  private async rebuildProducer(code: string): Promise<void> {
    this.options.metrics.producerRecreated.inc({ code });
    this.log.warn({ code }, 'discarding the transactional producer and building a new one');
    await this.discardProducer();
    try {
      await this.initProducer();
    } catch (error) {
      this.log.warn(
        { err: describeKafkaError(error) },
        'the new producer could not be initialised yet; the next transaction retries',
      );
    }
  }

  private async initProducer(): Promise<Producer> {
    const producer = this.options.kafka.producer({
      transactionalId: this.options.transactionalId,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: this.options.transactionTimeoutMs,
      allowAutoTopicCreation: false,
      // murmur2 over the key bytes, as the Java client: Java and Streams consumers co-partition with us.
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    try {
      await producer.connect();
      // kafkajs runs InitProducerId on the first transaction(); nothing is added, so abort() sends no EndTxn.
      const init = await producer.transaction();
      await init.abort();
    } catch (error) {
      await producer.disconnect().catch(() => undefined);
      throw error;
    }
    this.producer = producer;
    return producer;
  }

  private async discardProducer(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    if (producer === undefined) return;
    try {
      await producer.disconnect();
    } catch (error) {
      this.log.debug({ err: describeKafkaError(error) }, 'disconnecting a discarded producer failed');
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
