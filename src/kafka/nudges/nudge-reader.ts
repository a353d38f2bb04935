/**
 * The reader of the nudge topic (distributed mode, nudge-topic.ts): every instance reads every partition, in a
 * consumer group of its own (kafkajs has no manual assignment), and hands each nudge to `each`, which acts only
 * on the locations this instance schedules.
 *
 * Where it reads: it never commits (its group vanishes once empty), and it never skips a nudge written while it
 * was away from the group.
 * - It starts at the nudges written since `startAtMs` (the instance's start, before it owned any location), so
 *   a nudge written while this instance was joining its groups still reaches it.
 * - After any rejoin (a coordinator move, a session expiry, a restart of the consumer after a crash) it seeks
 *   each partition to the offset after the last nudge it handed on: kafkajs would resume an uncommitted group at
 *   the end. A nudge read twice costs one extra poll of its location; a nudge skipped costs up to a
 *   reconciliation interval.
 *
 * When it cannot run: after a crash kafkajs does not restart from (`restart: false`: a missing Read ACL on the
 * topic or the group, an unsupported protocol), `health()` says so and names the error, and a new consumer is
 * started after a backoff (1 s doubling to 60 s) until one joins; `health()` is ok again once it has. The
 * connector's readiness reports it (check `nudge_reader`). A crash kafkajs restarts from by itself only logs.
 */
import type { Consumer, Kafka } from 'kafkajs';
import type { Logger } from '../../logging/logger.js';
import { backoffDelayMs, type Backoff } from '../../time/backoff.js';
import { startTimer, type Clock, type Timer } from '../../time/clock.js';
import { describeKafkaError, kafkaErrorTypes } from '../client/kafka-errors.js';
import { decodeNudge, type NudgeMessage } from './nudge-topic.js';

/** Where a partition's reading starts: an offset of the topic. */
export interface PartitionOffset {
  partition: number;
  offset: string;
}

export interface NudgeReaderHealth {
  ok: boolean;
  /** Why it is not running, and when it tries again (no secrets: a Kafka error's message and type). */
  detail?: string;
}

export interface NudgeTopicReaderOptions {
  topic: string;
  /**
   * A new kafkajs consumer of the instance's own group (one per start, and one per restart after a crash). It
   * must restart itself after a retriable crash only while `restarts()` says so (kafkajs's
   * `retry.restartOnFailure`): a crash caused by the reader's own stop would otherwise start it again.
   */
  consumer: (restarts: () => boolean) => Consumer;
  /** The offset of each partition's first nudge written at or after `ms` (its end when none is). */
  offsetsAt: (ms: number) => Promise<PartitionOffset[]>;
  /** Nudges written from this time on are read (ms since the epoch). */
  startAtMs: number;
  each: (message: NudgeMessage) => void;
  clock: Clock;
  logger: Logger;
  /** The wait before a new consumer after a crash kafkajs does not restart from. */
  restartBackoff?: Backoff;
}

const RESTART_BACKOFF: Backoff = { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0.5 };

export class NudgeTopicReader {
  /** partition -> the offset to read next: one past the last nudge handed on (or the start's offset). */
  private readonly next = new Map<number, string>();
  private consumer: Consumer | undefined;
  private restartTimer: Timer | undefined;
  /** Crashes without a join since: the restart backoff's exponent. */
  private crashes = 0;
  private stoppedBy: { reason: string; retryAtMs: number | null } | null = null;
  private stopping = false;

  constructor(private readonly options: NudgeTopicReaderOptions) {}

  /** Resolves once the consumer runs (it then reads in the background). */
  async start(): Promise<void> {
    const { offsetsAt, startAtMs, logger, topic } = this.options;
    try {
      for (const { partition, offset } of await offsetsAt(startAtMs)) this.next.set(partition, offset);
    } catch (error) {
      // The consumer would fail the same way if the topic cannot be read: its crash says so (health()).
      logger.warn(
        { err: error, topic },
        'nudge topic: offsets at the start time not found; reading from its end',
      );
    }
    await this.run();
  }

  /** Whether the reader runs; not ok from a crash kafkajs does not restart from until a new consumer joins. */
  health(): NudgeReaderHealth {
    const stopped = this.stoppedBy;
    if (stopped === null) return { ok: true };
    const retry =
      stopped.retryAtMs === null
        ? 'starting a new consumer'
        : `a new consumer in ${Math.max(0, Math.ceil((stopped.retryAtMs - this.options.clock.now()) / 1_000))} s`;
    return { ok: false, detail: `NUDGE_READER_STOPPED: ${stopped.reason}; ${retry}` };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.restartTimer?.cancel();
    await this.consumer?.disconnect();
  }

  private async run(): Promise<void> {
    const { topic, each, logger } = this.options;
    const consumer = this.options.consumer(() => !this.stopping);
    this.consumer = consumer;
    this.listen(consumer);
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: false });
    await consumer.run({
      autoCommit: false,
      eachMessage: ({ partition, message }) => {
        const nudge = decodeNudge(message.value);
        if (nudge === null) logger.debug({ topic, offset: message.offset }, 'not a nudge: skipped');
        else each(nudge);
        this.next.set(partition, (BigInt(message.offset) + 1n).toString());
        return Promise.resolve();
      },
    });
  }

  private listen(consumer: Consumer): void {
    const { topic, logger } = this.options;
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      if (consumer !== this.consumer) return;
      this.crashes = 0;
      if (this.stoppedBy !== null) logger.info({ topic }, 'nudge topic reader running again');
      this.stoppedBy = null;
      // Synchronous with the join: the seeks apply before the new generation's first fetch.
      for (const partition of payload.memberAssignment[topic] ?? []) {
        const offset = this.next.get(partition);
        if (offset !== undefined) consumer.seek({ topic, partition, offset });
      }
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (consumer !== this.consumer || this.stopping) return;
      const reason = describeKafkaError(payload.error);
      if (payload.restart) {
        logger.warn({ topic, reason }, 'nudge topic reader crashed; kafkajs restarts it');
        return;
      }
      const waitMs = this.scheduleRestart(reason);
      logger.error(
        { topic, reason, types: kafkaErrorTypes(payload.error), retryInMs: waitMs },
        'nudge topic reader stopped: nudges from other instances are not acted on here until it runs again ' +
          '(check the Read ACLs on the nudge topic and the group <connector.name>-nudges-*)',
      );
    });
  }

  private async restart(): Promise<void> {
    if (this.stopping || this.stoppedBy === null) return;
    this.stoppedBy = { ...this.stoppedBy, retryAtMs: null };
    await this.consumer?.disconnect().catch(() => undefined);
    try {
      await this.run();
    } catch (error) {
      // Not even connected: a crash of its own, tried again after the next wait.
      void this.consumer?.disconnect().catch(() => undefined);
      this.scheduleRestart(describeKafkaError(error));
    }
  }

  /** Not running for `reason`: a new consumer after the backoff's next wait, which it returns. */
  private scheduleRestart(reason: string): number {
    const { clock } = this.options;
    this.crashes += 1;
    const waitMs = backoffDelayMs(
      this.options.restartBackoff ?? RESTART_BACKOFF,
      this.crashes,
      clock.random(),
    );
    this.stoppedBy = { reason, retryAtMs: clock.now() + waitMs };
    this.restartTimer = startTimer(clock, waitMs, () => void this.restart());
    return waitMs;
  }
}

/** A reader on a kafkajs client: consumers of group `groupId`, start offsets asked of an admin client. */
export function kafkaNudgeReader(
  kafka: Kafka,
  options: Omit<NudgeTopicReaderOptions, 'consumer' | 'offsetsAt'> & { groupId: string },
): NudgeTopicReader {
  const { groupId, ...rest } = options;
  return new NudgeTopicReader({
    ...rest,
    consumer: (restarts) =>
      kafka.consumer({ groupId, retry: { restartOnFailure: () => Promise.resolve(restarts()) } }),
    offsetsAt: async (ms) => {
      const admin = kafka.admin();
      await admin.connect();
      try {
        return await admin.fetchTopicOffsetsByTimestamp(options.topic, ms);
      } finally {
        await admin.disconnect();
      }
    },
  });
}
