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
 * Pages are sent concurrently (kafkajs pipelines them); one page's offset always follows its records.
 *
 * After a failed send the producer is discarded and the next page builds a new one: kafkajs rolls its
 * sequence numbers back when a produce request fails, even one the broker wrote, so the next batch on
 * that producer would be refused (OUT_OF_ORDER_SEQUENCE_NUMBER) or, holding as many records, taken by the
 * broker for a duplicate and acknowledged without being written. A new producer id starts afresh.
 *
 * The producer's build, discard and close are the shared ProducerLifecycle's (producer-lifecycle.ts);
 * this file is how a page is written.
 */
import { Partitioners, type Producer, type ProducerConfig } from 'kafkajs';
import { ConnectorError, FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { PageCommit, RecordSink } from '../../sync/ports.js';
import {
  describeKafkaError,
  fatalKafkaErrorType,
  isProgrammerError,
  kafkaErrorTypes,
} from '../kafka-errors.js';
import {
  chunkTopicMessages,
  countDiverted,
  pageMessages,
  topicMessages,
  type CallEncoder,
  type SinkTopics,
} from '../page-messages.js';
import { systemClock, type Clock } from '../../time/clock.js';
import { ProducerLifecycle } from './producer-lifecycle.js';

/** The part of a kafkajs producer this sink uses; kafkajs' Producer satisfies it. */
export type IdempotentProducer = Pick<Producer, 'connect' | 'disconnect' | 'send' | 'sendBatch'>;

export interface AtLeastOnceSinkOptions {
  /** Builds the producer: a kafkajs `Kafka` client (a seam for unit tests). */
  kafka: { producer(config: ProducerConfig): IdempotentProducer };
  encoder: CallEncoder;
  topics: SinkTopics;
  connectorName: string;
  /**
   * Bytes per sendBatch call (kafka.maxBytesPerTransaction, under max.message.bytes): a larger page is sent
   * in parts (chunkTopicMessages). Unset: one call.
   */
  maxBytesPerSend?: number;
  metrics: ConnectorMetrics;
  logger: Logger;
  clock?: Clock;
}

export class AtLeastOnceRecordSink implements RecordSink {
  private readonly producers: ProducerLifecycle<IdempotentProducer>;
  private started = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly clock: Clock;

  constructor(private readonly options: AtLeastOnceSinkOptions) {
    this.clock = options.clock ?? systemClock;
    this.producers = new ProducerLifecycle({
      build: () =>
        options.kafka.producer({
          idempotent: true,
          maxInFlightRequests: 1,
          allowAutoTopicCreation: false,
          createPartitioner: Partitioners.DefaultPartitioner,
        }),
      metrics: options.metrics,
      logger: options.logger.child({ component: 'at-least-once-sink' }),
      clock: this.clock,
    });
  }

  async start(): Promise<void> {
    await this.currentProducer();
    this.started = true;
  }

  commitPage(commit: PageCommit): Promise<void> {
    if (!this.started || this.producers.isClosing) {
      return Promise.reject(
        new RetriableError(
          'KAFKA_SINK_CLOSED',
          'the Kafka sink is not started or is closing; the page was not committed',
        ),
      );
    }
    const work = this.send(commit);
    const tracked = work.then(
      () => undefined,
      () => undefined,
    );
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
    return work;
  }

  /** The producer to send with, built (once, shared by concurrent callers) when there is none. */
  private async currentProducer(): Promise<IdempotentProducer> {
    try {
      return await this.producers.acquire();
    } catch (error) {
      if (error instanceof ConnectorError) throw error;
      throw new RetriableError(
        'KAFKA_UNAVAILABLE',
        `cannot connect the producer: ${describeKafkaError(error)}`,
        { cause: error },
      );
    }
  }

  /** Waits for the pages in flight (at most `timeoutMs` when given), then disconnects. */
  async close(timeoutMs?: number): Promise<void> {
    await this.producers.beginClose(
      Promise.all(this.inFlight).then(() => undefined),
      timeoutMs,
    );
    await this.producers.close();
  }

  private async send(commit: PageCommit): Promise<void> {
    const page = pageMessages(
      commit,
      this.options.encoder,
      this.options.connectorName,
      new Date(this.clock.now()),
    );
    const records = topicMessages([page], this.options.topics, { offsets: false });
    const producer = await this.currentProducer();
    try {
      for (const part of chunkTopicMessages(
        records,
        this.options.maxBytesPerSend ?? Number.POSITIVE_INFINITY,
      ))
        await producer.sendBatch({ topicMessages: part, acks: -1 });
      await producer.send({ topic: this.options.topics.offsets, messages: [page.offset], acks: -1 });
    } catch (error) {
      // Unless a concurrent page's failure replaced it already; the next page builds a new one.
      void this.producers.discard(kafkaErrorTypes(error)[0] ?? 'SEND_FAILED', producer);
      if (isProgrammerError(error)) throw error; // a bug, never retried as a failed send
      const fatalType = fatalKafkaErrorType(error);
      if (fatalType !== undefined) {
        throw new FatalError(
          'KAFKA_NOT_PERMITTED',
          `Kafka refused the write (${fatalType}): check the ACLs and kafka.* settings`,
          { cause: error },
        );
      }
      throw new RetriableError(
        'KAFKA_SEND_FAILED',
        `the page was not fully written (its offset was not stored): ${describeKafkaError(error)}`,
        {
          cause: error,
        },
      );
    }
    countDiverted(this.options.metrics, [page]);
  }
}
