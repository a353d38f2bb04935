/**
 * The reader of the nudge topic (distributed mode, nudge-topic.ts): every instance reads every partition, in a
 * consumer group of its own (kafkajs has no manual assignment), and hands each nudge to `each`, which acts only
 * on the locations this instance schedules, and each replay key a record shares to `replayKeys` (the receiver's
 * replay window: a delivery taken by any instance is a replay here too).
 *
 * Where it reads: it never commits (its group vanishes once empty), and it never skips a nudge written while it
 * was away from the group.
 * - It starts at the nudges written since `startAtMs` (the instance's start, before it owned any location), so
 *   a nudge written while this instance was joining its groups still reaches it. With `keysFromMs` it reads
 *   from that earlier time, handing on only the replay keys of the records before `startAtMs`. Those offsets are asked again
 *   (`START_OFFSETS_RETRY`) while the asking fails (a topic just created whose leaders are not elected yet, a
 *   broker busy): without them a partition is read from wherever kafkajs starts, its end, and a partition that
 *   was away from the reader before it handed on any nudge of it would skip what was written meanwhile.
 * - After any rejoin (a coordinator move, a session expiry, a restart of the consumer after a crash) it seeks
 *   each partition to the offset after the last nudge it handed on: kafkajs would resume an uncommitted group at
 *   the end. A nudge read twice costs one extra poll of its location; a nudge skipped costs up to a
 *   reconciliation interval.
 *
 * When it cannot run: after a consumer failed to start, or a crash kafkajs does not restart from (`restart: false`:
 * a missing Read ACL on the topic or the group, an unsupported protocol), `health()` says so and names the error,
 * and a new consumer is started after a backoff (1 s doubling to 60 s, time/restart-loop.ts) until one joins;
 * `health()` is ok again once it has. The connector's readiness reports it (check `nudge_reader`). A crash kafkajs
 * restarts from by itself only logs.
 */
import type { Kafka } from 'kafkajs';
import type { Logger } from '../../logging/logger.js';
import { retrying, type Backoff, type BackoffPolicy } from '../../time/backoff.js';
import type { Clock } from '../../time/clock.js';
import { RestartLoop, type Restartable, type RestartEvents } from '../../time/restart-loop.js';
import { describeKafkaError, kafkaErrorTypes } from '../client/kafka-errors.js';
import { consumerAttempt, readerHealth, type NewConsumer } from '../topics/restarting-consumer.js';
import { decodeNudgeRecord, type NudgeMessage, type SharedReplayKey } from './nudge-topic.js';

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
   * A new kafkajs consumer of the instance's own group (one per start, and one per restart after a failure),
   * restarting itself after a retriable crash only while `restarts()` says so (restarting-consumer.ts NewConsumer).
   */
  consumer: NewConsumer;
  /** The offset of each partition's first nudge written at or after `ms` (its end when none is). */
  offsetsAt: (ms: number) => Promise<PartitionOffset[]>;
  /** Nudges written from this time on are read (ms since the epoch). */
  startAtMs: number;
  /**
   * Replay keys written from this earlier time on are read too (ms since the epoch): the records written
   * between it and `startAtMs` hand on their keys only (`replayKeys`), never their nudges, so an instance that
   * starts knows the deliveries the others took within the replay window's keep time. Absent: from `startAtMs`.
   */
  keysFromMs?: number;
  each: (message: NudgeMessage) => void;
  /**
   * Each replay key a record shares (nudge-topic.ts), this instance's own included, before the record's nudge
   * goes to `each`; a fan-out's key comes once per record that carries it. Absent: keys are not read.
   */
  replayKeys?: (replay: SharedReplayKey) => void;
  clock: Clock;
  logger: Logger;
  /** The wait before a new consumer after a crash kafkajs does not restart from. */
  restartBackoff?: Backoff;
}

const RESTART_BACKOFF: Backoff = { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0.5 };

/** Asking the start offsets: about 20 s in all before the reader starts without them. */
export const START_OFFSETS_RETRY: BackoffPolicy = {
  initialDelayMs: 500,
  maxDelayMs: 5_000,
  multiplier: 2,
  jitter: 0.2,
  maxAttempts: 7,
};

export class NudgeTopicReader {
  /** partition -> the offset to read next: one past the last nudge handed on (or the start's offset). */
  private readonly next = new Map<number, string>();
  /** partition -> the first offset whose nudge is handed on (`startAtMs`'s); records before it: keys only. */
  private readonly nudgesFrom = new Map<number, bigint>();
  /** One consumer per attempt; a new one after a consumer failed to start or crashed for good. */
  private readonly consumers: RestartLoop;

  constructor(private readonly options: NudgeTopicReaderOptions) {
    const { topic, logger, clock } = options;
    this.consumers = new RestartLoop({
      create: (events) => this.attempt(events),
      describe: describeKafkaError,
      onFailure: ({ error, reason, retryInMs }) =>
        logger.error(
          { topic, reason, types: kafkaErrorTypes(error), retryInMs },
          'nudge topic reader stopped: nudges from other instances are not acted on here until it runs again ' +
            '(check the Read ACLs on the nudge topic and the group <connector.name>-nudges-*)',
        ),
      onRecovered: () => logger.info({ topic }, 'nudge topic reader running again'),
      backoff: options.restartBackoff ?? RESTART_BACKOFF,
      clock,
    });
  }

  /**
   * Resolves once the first consumer's start has settled (it then joins and reads in the background); one that
   * failed to start is tried again after the backoff, and `health()` says why meanwhile. Never rejects.
   */
  async start(): Promise<void> {
    const { offsetsAt, startAtMs, logger, topic, clock } = this.options;
    try {
      const offsets = await retrying(
        START_OFFSETS_RETRY,
        {
          clock,
          retriable: () => true,
          onRetry: ({ attempt, error, waitMs }) =>
            logger.info(
              { topic, attempt, reason: describeKafkaError(error), retryInMs: waitMs },
              'nudge topic: offsets at the start time not found yet; asking again',
            ),
        },
        () => offsetsAt(startAtMs),
      );
      for (const { partition, offset } of offsets) this.next.set(partition, offset);
      await this.startKeysEarlier(offsets);
    } catch (error) {
      // The consumer would fail the same way if the topic cannot be read: its failure says so (health()).
      logger.warn(
        { err: error, topic },
        'nudge topic: offsets at the start time not found; reading from its end',
      );
    }
    await this.consumers.start();
  }

  /**
   * With `keysFromMs`: each partition is read from that earlier time, its nudges handed on only from `starts`
   * (`startAtMs`'s offsets). Asked once: without those offsets the reader starts at `starts`, knowing only the
   * keys written since it started.
   */
  private async startKeysEarlier(starts: readonly PartitionOffset[]): Promise<void> {
    const { offsetsAt, startAtMs, keysFromMs, logger, topic } = this.options;
    if (keysFromMs === undefined || keysFromMs >= startAtMs) return;
    try {
      const earlier = await offsetsAt(keysFromMs);
      for (const { partition, offset } of starts) this.nudgesFrom.set(partition, BigInt(offset));
      for (const { partition, offset } of earlier)
        if (this.nudgesFrom.has(partition)) this.next.set(partition, offset);
    } catch (error) {
      logger.warn(
        { topic, reason: describeKafkaError(error) },
        'nudge topic: offsets at the replay window start not found; replay keys are read from the start time',
      );
    }
  }

  /** Whether the reader runs; not ok from a consumer's failure until a new consumer joins. */
  health(): NudgeReaderHealth {
    return readerHealth('NUDGE_READER_STOPPED', this.consumers.failure());
  }

  async stop(): Promise<void> {
    await this.consumers.close();
  }

  /** One consumer (restarting-consumer.ts): it resumes each partition after the last nudge handed on. */
  private attempt(events: RestartEvents): Restartable {
    const { topic, each, replayKeys, logger } = this.options;
    return consumerAttempt(this.options.consumer, events, {
      topic,
      fromBeginning: false,
      resumeAt: (partition) => this.next.get(partition),
      eachMessage: ({ partition, message }) => {
        const record = decodeNudgeRecord(message.value);
        if (record === null) logger.debug({ topic, offset: message.offset }, 'not a nudge: skipped');
        if (record?.replay) replayKeys?.(record.replay);
        const keysOnly = BigInt(message.offset) < (this.nudgesFrom.get(partition) ?? 0n);
        if (record?.nudge && !keysOnly) each(record.nudge);
        this.next.set(partition, (BigInt(message.offset) + 1n).toString());
        return Promise.resolve();
      },
      restartedCrash: (error) =>
        logger.warn(
          { topic, reason: describeKafkaError(error) },
          'nudge topic reader crashed; kafkajs restarts it',
        ),
    });
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
