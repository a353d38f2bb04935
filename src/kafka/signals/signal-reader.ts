/**
 * The reader of the signals topic (signal-topic.ts): the whole topic, from its beginning, as a read_committed
 * consumer sees it (an outcome written in a page's transaction appears once the page commits).
 *
 * Two phases, so that nothing is acted on from half a history:
 * 1. `start()` reads every partition up to the end it has then (topic-reader.ts readTopicToEnd) and hands each
 *    entry to `each`; it resolves once that is done. A signal then seen without an outcome has none: the owner of
 *    its location may answer it.
 * 2. A consumer of a group of its own (kafkajs has no manual assignment; the group never commits and vanishes
 *    once empty) then reads on from there: on each join it seeks every partition to the offset after the last
 *    entry handed on, so a rejoin neither skips nor repeats more than a record (an entry handed twice is
 *    harmless: signal-ledger.ts folds by id).
 *
 * Its position in each partition (`position`) is the offset after the last record it read there: the last entry
 * handed on, or past transaction markers and aborted records once a batch ending with them was read in full. Once
 * the first read is done, a position at a partition's read_committed end (`endOffsets`) means every entry written
 * there before that end was handed on (runtime/signals/handover-catch-up.ts waits for it after a handover).
 *
 * When the consumer cannot start, or crashes and kafkajs does not restart it (a missing Read ACL on the topic or
 * the group), `health()` says so and names the error, and a new consumer is started after a backoff until one
 * joins (time/restart-loop.ts); it resumes where the last one stopped.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { Logger } from '../../logging/logger.js';
import type { Backoff } from '../../time/backoff.js';
import { systemClock, type Clock } from '../../time/clock.js';
import { RestartLoop, type Restartable, type RestartEvents } from '../../time/restart-loop.js';
import { describeKafkaError } from '../client/kafka-errors.js';
import { consumerAttempt, readerHealth } from '../topics/restarting-consumer.js';
import { endOffsets, readTopicToEnd } from '../topics/topic-reader.js';
import { decodeSignalRecord, type SignalTopicEntry } from './signal-model.js';

export interface SignalReaderHealth {
  ok: boolean;
  /** Why it is not reading (a Kafka error's message and type, no secret). */
  detail?: string;
}

export interface SignalTopicReaderOptions {
  topic: string;
  connectorName: string;
  /** Prefix of the consumer groups: the first read's throw-away group and the reading group. */
  groupIdPrefix: string;
  /** How long the first read may take (kafka.offsetsLoadTimeoutMs is the same kind of read). */
  loadTimeoutMs: number;
  /** Every entry of this connector, in each partition's order; records of other connectors are skipped. */
  each: (entry: SignalTopicEntry, at: { partition: number; offset: string }) => void;
  /** The position in `partition` moved on (after `each`, if it handed an entry on). */
  moved?: (partition: number) => void;
  logger: Logger;
  clock?: Clock;
  restartBackoff?: Backoff;
}

const RESTART_BACKOFF: Backoff = { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0.5 };

export class SignalTopicReader {
  /** partition -> the offset to read next. */
  private readonly next = new Map<number, bigint>();
  /** The reading consumers, one per attempt: a new one after one failed to start or crashed for good. */
  private readonly consumers: RestartLoop;
  private stopped = false;
  private readonly clock: Clock;

  constructor(
    private readonly kafka: Kafka,
    private readonly options: SignalTopicReaderOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    const { topic, logger } = options;
    this.consumers = new RestartLoop({
      create: (events) => this.attempt(events),
      describe: describeKafkaError,
      onFailure: ({ reason, retryInMs }) =>
        logger.error(
          { topic, reason, retryInMs },
          'signals topic reader stopped: signals are not acted on here until it runs again ' +
            '(check the Read ACLs on the signals topic and the groups <prefix>-*)',
        ),
      onRecovered: () => logger.info({ topic }, 'signals topic reader running again'),
      backoff: options.restartBackoff ?? RESTART_BACKOFF,
      clock: this.clock,
    });
  }

  /**
   * Resolves once the topic is read up to its end of now; reading then goes on in the background (a consumer
   * that cannot start is tried again, as after a crash: `health()` says why meanwhile). Rejects when that first
   * read fails. Stopped before the first read is done, it starts no consumer.
   */
  async start(): Promise<void> {
    const { topic, groupIdPrefix, loadTimeoutMs } = this.options;
    for (const { partition, end } of await endOffsets(this.kafka, topic, this.clock))
      this.next.set(partition, end);
    await readTopicToEnd(
      this.kafka,
      { topic, groupIdPrefix: `${groupIdPrefix}-load`, timeoutMs: loadTimeoutMs, clock: this.clock },
      (record) => this.hand(record.partition, record.offset, record.key, record.value),
    );
    if (this.stopped) return;
    await this.consumers.start();
  }

  /**
   * The offset after the last record read in `partition` (0 before any). Meaningful once `start()` resolved: the
   * first read sets it to the end it reads up to before it hands the records on.
   */
  position(partition: number): bigint {
    return this.next.get(partition) ?? 0n;
  }

  /** The read_committed end of each partition now (the last stable offset), by partition. */
  async endOffsets(): Promise<Map<number, bigint>> {
    const ends = await endOffsets(this.kafka, this.options.topic, this.clock);
    return new Map(ends.map(({ partition, end }) => [partition, end]));
  }

  health(): SignalReaderHealth {
    return readerHealth('SIGNAL_READER_STOPPED', this.consumers.failure());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.consumers.close();
  }

  private hand(partition: number, offset: string, key: Buffer | null, value: Buffer | null): void {
    const moved = this.moveTo(partition, BigInt(offset) + 1n);
    const entry = decodeSignalRecord(this.options.connectorName, key, value, this.clock.now());
    if (entry !== null) this.options.each(entry, { partition, offset });
    if (moved) this.options.moved?.(partition);
  }

  /** Sets the position in `partition` to `after` unless it is there or beyond already; whether it moved. */
  private moveTo(partition: number, after: bigint): boolean {
    if (after <= (this.next.get(partition) ?? 0n)) return false;
    this.next.set(partition, after);
    return true;
  }

  /**
   * One reading consumer (restarting-consumer.ts): it resumes each partition after the last entry handed on.
   * A batch whose every message reached `eachMessage` moves the position past its last record, a transaction
   * marker or an aborted record included (kafkajs hands on neither); one cut short (a seek after a rejoin, a stop)
   * moves nothing more: it is read again.
   */
  private attempt(events: RestartEvents): Restartable {
    const { topic, groupIdPrefix } = this.options;
    /** Messages of the batch in progress that reached eachMessage, by partition. */
    const delivered = new Map<number, number>();
    const newConsumer = (restarts: () => boolean) => {
      const consumer = this.kafka.consumer({
        groupId: `${groupIdPrefix}-${randomUUID()}`,
        retry: { restartOnFailure: () => Promise.resolve(restarts()) },
      });
      consumer.on(consumer.events.START_BATCH_PROCESS, ({ payload }) => delivered.set(payload.partition, 0));
      consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
        const { partition, batchSize, lastOffset } = payload;
        if ((delivered.get(partition) ?? 0) < batchSize) return;
        if (this.moveTo(partition, BigInt(lastOffset) + 1n)) this.options.moved?.(partition);
      });
      return consumer;
    };
    return consumerAttempt(newConsumer, events, {
      topic,
      fromBeginning: true,
      resumeAt: (partition) => String(this.next.get(partition) ?? 0n),
      eachMessage: ({ partition, message }) => {
        delivered.set(partition, (delivered.get(partition) ?? 0) + 1);
        // A record read again after a seek raced a fetch is skipped: each entry is handed on once.
        if (BigInt(message.offset) >= (this.next.get(partition) ?? 0n))
          this.hand(partition, message.offset, message.key, message.value);
        return Promise.resolve();
      },
    });
  }
}
