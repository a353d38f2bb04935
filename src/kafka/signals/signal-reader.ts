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
 * When the consumer crashes and kafkajs does not restart it (a missing Read ACL on the topic or the group),
 * `health()` says so and names the error, and a new consumer is started after a backoff until one joins.
 */
import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka } from 'kafkajs';
import type { Logger } from '../../logging/logger.js';
import { backoffDelayMs, type Backoff } from '../../time/backoff.js';
import { startTimer, systemClock, type Clock, type Timer } from '../../time/clock.js';
import { describeKafkaError } from '../client/kafka-errors.js';
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
  logger: Logger;
  clock?: Clock;
  restartBackoff?: Backoff;
}

const RESTART_BACKOFF: Backoff = { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0.5 };

export class SignalTopicReader {
  /** partition -> the offset to read next. */
  private readonly next = new Map<number, bigint>();
  private consumer: Consumer | undefined;
  private restartTimer: Timer | undefined;
  private crashes = 0;
  private failure: string | null = null;
  private stopping = false;
  private readonly clock: Clock;

  constructor(
    private readonly kafka: Kafka,
    private readonly options: SignalTopicReaderOptions,
  ) {
    this.clock = options.clock ?? systemClock;
  }

  /** Resolves once the topic is read up to its end of now; reading then goes on in the background. */
  async start(): Promise<void> {
    const { topic, groupIdPrefix, loadTimeoutMs } = this.options;
    for (const { partition, end } of await endOffsets(this.kafka, topic, this.clock))
      this.next.set(partition, end);
    await readTopicToEnd(
      this.kafka,
      { topic, groupIdPrefix: `${groupIdPrefix}-load`, timeoutMs: loadTimeoutMs, clock: this.clock },
      (record) => this.hand(record.partition, record.offset, record.key, record.value),
    );
    await this.run();
  }

  health(): SignalReaderHealth {
    return this.failure === null
      ? { ok: true }
      : { ok: false, detail: `SIGNAL_READER_STOPPED: ${this.failure}` };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.restartTimer?.cancel();
    await this.consumer?.disconnect();
  }

  private hand(partition: number, offset: string, key: Buffer | null, value: Buffer | null): void {
    const after = BigInt(offset) + 1n;
    if (after > (this.next.get(partition) ?? 0n)) this.next.set(partition, after);
    const entry = decodeSignalRecord(this.options.connectorName, key, value, this.clock.now());
    if (entry === null) return;
    this.options.each(entry, { partition, offset });
  }

  private async run(): Promise<void> {
    const { topic, groupIdPrefix, logger } = this.options;
    const consumer = this.kafka.consumer({
      groupId: `${groupIdPrefix}-${randomUUID()}`,
      // A crash caused by stop() itself (its disconnect closing a fetch's connection) must not start it again.
      retry: { restartOnFailure: () => Promise.resolve(!this.stopping) },
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      if (consumer !== this.consumer) return;
      this.crashes = 0;
      if (this.failure !== null) logger.info({ topic }, 'signals topic reader running again');
      this.failure = null;
      // Synchronous with the join: the seeks apply before the generation's first fetch.
      for (const partition of payload.memberAssignment[topic] ?? [])
        consumer.seek({ topic, partition, offset: String(this.next.get(partition) ?? 0n) });
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (consumer !== this.consumer || this.stopping || payload.restart) return;
      this.failed(describeKafkaError(payload.error));
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: ({ partition, message }) => {
        // A record read again after a seek raced a fetch is skipped: each entry is handed on once.
        if (BigInt(message.offset) >= (this.next.get(partition) ?? 0n))
          this.hand(partition, message.offset, message.key, message.value);
        return Promise.resolve();
      },
    });
  }

  /** Not reading for `reason`: a new consumer after the backoff's next wait. */
  private failed(reason: string): void {
    this.crashes += 1;
    const waitMs = backoffDelayMs(
      this.options.restartBackoff ?? RESTART_BACKOFF,
      this.crashes,
      this.clock.random(),
    );
    this.failure = `${reason}; a new consumer in ${Math.ceil(waitMs / 1000)} s`;
    this.options.logger.error(
      { topic: this.options.topic, reason, retryInMs: waitMs },
      'signals topic reader stopped: signals are not acted on here until it runs again ' +
        '(check the Read ACLs on the signals topic and the groups <prefix>-*)',
    );
    this.restartTimer = startTimer(this.clock, waitMs, () => void this.restart());
  }

  private async restart(): Promise<void> {
    if (this.stopping) return;
    await this.consumer?.disconnect().catch(() => undefined);
    try {
      await this.run();
    } catch (error) {
      void this.consumer?.disconnect().catch(() => undefined);
      this.failed(describeKafkaError(error));
    }
  }
}
