/**
 * The signals of a running instance, put together: the signals topic checked (created under
 * `kafka.createTopics`), a writer of outcomes, the reader of the topic and the answerer it feeds
 * (signal-answers.ts). The one call the runtime makes to take signals.
 *
 * Start-up is neither held up nor failed by signals, an optional control channel: `openSignals` returns at once,
 * and the topic check, the writer's connect and the reader's first read (a consumer-group join, about 3 s) run in
 * the background; answering begins when they are done. See openSignals for failures.
 *
 * `paused` is the port the scheduler reads (signal-ports.ts PausedLocations); call `ownershipChanged()` after each
 * change of what this instance owns (a rebalance, a takeover, a partition let go) so that signals waiting for an
 * owner are answered.
 *
 * After a handover: the signals of a partition this instance comes to own are answered and carried out only once
 * its reader has read that partition up to the end it had when the ownership was seen (signal-catch-up.ts):
 * what the previous owner answered and completed is known first. Ownership is looked at on each change, on each
 * entry read, before each page of a location (`answering`), and when the channel opens.
 */
import type { ConnectorConfig } from '../../config/schema.js';
import type { KafkaClient } from '../../kafka/client/port.js';
import { describeKafkaError } from '../../kafka/client/kafka-errors.js';
import { SignalTopicReader } from '../../kafka/signals/signal-reader.js';
import { ensureSignalTopic, SignalTopicWriter } from '../../kafka/signals/signal-topic.js';
import { signalsTopicName, topicExists } from '../../kafka/topics/topics.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import { RetriableError } from '../../errors/index.js';
import type { Backoff } from '../../time/backoff.js';
import type { Clock } from '../../time/clock.js';
import { RestartLoop, type Restartable, type RestartEvents } from '../../time/restart-loop.js';
import { SignalCatchUp } from './signal-catch-up.js';
import { SignalAnswers, type SignalsStatus } from './signal-answers.js';
import type { LocationSignalTarget, PausedLocations } from './signal-ports.js';

export interface SignalsOptions {
  config: Pick<ConnectorConfig, 'connector' | 'kafka'>;
  /** This instance, as outcomes name it. */
  instance: string;
  /** Whether this instance owns (and writes for) the offsets partition now (read at every change and entry). */
  ownsPartition: (partition: number) => boolean;
  /** Whether the running configuration lists the location (after a reload: the reloaded one). */
  configured: (locationUid: string) => boolean;
  target: LocationSignalTarget;
  /** See SignalAnswersOptions.pausedChanged. */
  pausedChanged?: () => void;
  metrics: Pick<ConnectorMetrics, 'signalOutcomes' | 'pausedLocations' | 'signalsRunning'>;
  logger: Logger;
  clock: Clock;
  retryBackoff?: Backoff;
}

export interface Signals {
  paused: PausedLocations;
  /** Answers the signals that wait for an owner this instance has become. */
  ownershipChanged(): Promise<void>;
  /** Not ok while the channel is not open or its reader's consumer is not running; the detail says why. */
  health(): { ok: boolean; detail?: string };
  /** For `/status`: the paused locations and the running signals. */
  status(): SignalsStatus;
  /** Whether a signal may still need carrying out (signal-answers.ts isOpen). */
  isOpen(signalId: string): boolean;
  /**
   * Whether the location's signals may be carried out now: its partition is owned, and read up to the end it had
   * when it came to be owned (handover-catch-up.ts). Asked by the signal queue before each page of a location.
   */
  answering(locationUid: string): boolean;
  /** A signal's effect is stored in full (signal-answers.ts completed). */
  completed(signalId: string, written: boolean): Promise<void>;
  /** Resolves once the first read is complete and its signals answered (tests; the runtime need not wait). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

const RETRY_BACKOFF: Backoff = { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0.5 };

/**
 * The signals channel, opened in the background: it resolves at once and never fails the start. Each attempt
 * (time/restart-loop.ts) checks (or creates) the topic, connects the writer, reads the topic to its end and
 * answers what waits; an attempt that fails (a missing ACL, a broker away, a topic with the wrong partition
 * count) is logged with the Kafka error, reported in `health()` and `status().problem`, undone and tried again
 * after a backoff, until one succeeds or `close()`. Once open, a reading consumer that stops (a Read ACL removed)
 * is restarted by the reader itself (kafka/signals/signal-reader.ts) and reported the same way meanwhile. A topic
 * missing with `kafka.createTopics: false` turns signals off (logged with what to create): nothing is tried
 * again, as before signals existed.
 */
export function openSignals(kafka: KafkaClient, options: SignalsOptions): Signals {
  const { config, logger, clock } = options;
  const topic = signalsTopicName(config.kafka.offsetsTopic);
  /** The writer of the attempt that connected one; null before (no outcome can be due then: nothing was read). */
  let writer: SignalTopicWriter | null = null;
  /** The reader of the attempt that opened the channel; null before. */
  let reader: SignalTopicReader | null = null;
  const backoff = options.retryBackoff ?? RETRY_BACKOFF;
  /** Which owned partitions are read up to their end as of their handover (signal-catch-up.ts). */
  const catchUp = new SignalCatchUp({
    topic,
    ownsPartition: options.ownsPartition,
    partitionCount: () => writer?.partitionCount,
    reader: () => reader,
    released: () => void answers.answerPending(),
    backoff,
    clock,
    logger,
  });
  const answers = new SignalAnswers({
    instance: options.instance,
    // -1 is no partition anyone owns: nothing is answered before a writer is connected.
    partitionOf: (uid) => writer?.partitionOf(uid) ?? -1,
    ownsPartition: (partition) => catchUp.answers(partition),
    configured: options.configured,
    write: (partition, outcome) =>
      writer === null
        ? Promise.reject(new RetriableError('SIGNALS_NOT_OPEN', 'the signals topic writer is not connected'))
        : writer.answerAt(partition, outcome),
    target: options.target,
    ...(options.pausedChanged !== undefined && { pausedChanged: options.pausedChanged }),
    clock,
    logger,
    metrics: options.metrics,
  });
  // One reader per attempt: a reader that failed its first read is stopped for good.
  const newReader = () =>
    new SignalTopicReader(kafka, {
      topic,
      connectorName: config.connector.name,
      groupIdPrefix: `${config.kafka.clientId ?? config.connector.name}-signals`,
      loadTimeoutMs: config.kafka.offsetsLoadTimeoutMs,
      each: (entry, at) => {
        void catchUp.observe();
        answers.onEntry(entry, at);
      },
      moved: () => catchUp.moved(),
      logger,
      clock,
    });
  /** One attempt: opens what is not open yet (the writer is kept across attempts), then a new reader. */
  const attempt = (events: RestartEvents): Restartable => {
    let stopped = false;
    let attemptReader: SignalTopicReader | null = null;
    return {
      start: async () => {
        if (writer === null) {
          if (!config.kafka.createTopics && !(await topicExists(kafka, topic))) {
            logger.warn(
              { topic },
              `signals are not taken: topic ${topic} is missing and kafka.createTopics is false ` +
                '(create it compacted, with the offsets topic’s partition count, and restart)',
            );
            return;
          }
          const partitionCount = await ensureSignalTopic(kafka, config.kafka);
          if (stopped) return;
          const connected = await SignalTopicWriter.connect(kafka, {
            topic,
            connectorName: config.connector.name,
            partitionCount,
          });
          if (stopped) return connected.disconnect();
          writer = connected;
        }
        if (stopped) return;
        attemptReader = newReader();
        await attemptReader.start();
        if (stopped) return;
        reader = attemptReader;
        // What is owned now waits for its end, read now (the reader is at the end it read at its start).
        await catchUp.observe();
        await answers.caughtUp();
        events.running();
      },
      stop: async () => {
        stopped = true;
        await attemptReader?.stop();
      },
    };
  };
  const channel = new RestartLoop({
    create: attempt,
    describe: (error) => `the signals topic could not be read: ${describeKafkaError(error)}`,
    onFailure: ({ error, retryInMs }) =>
      logger.warn({ err: error, topic, retryInMs }, 'signals topic not read: signals wait'),
    backoff,
    clock,
  });
  void channel.start();

  /** Why signals are not taken or not read now; null when they are (or are still opening). */
  const problem = (): string | null => {
    const failed = channel.failure();
    if (failed !== null) {
      const retry =
        failed.retryInMs === null ? 'trying again now' : `again in ${Math.ceil(failed.retryInMs / 1000)} s`;
      return `SIGNALS_NOT_READ: ${failed.reason}; ${retry}`;
    }
    const health = reader?.health();
    return health === undefined || health.ok ? null : (health.detail ?? 'SIGNAL_READER_STOPPED');
  };

  return {
    paused: answers,
    ownershipChanged: () => {
      void catchUp.observe();
      return answers.answerPending();
    },
    health: () => {
      const why = problem();
      return why === null ? { ok: true } : { ok: false, detail: why };
    },
    status: () => {
      const why = problem();
      return { ...answers.status(), ...(why !== null && { problem: why }) };
    },
    isOpen: (signalId) => answers.isOpen(signalId),
    answering: (uid) => {
      // Asked before each page of a location this instance runs: ownership is looked at again, for a change no
      // ownershipChanged() told (a standby becomes the writer after its takeover's change was told).
      void catchUp.observe();
      return writer !== null && catchUp.answers(writer.partitionOf(uid));
    },
    completed: (signalId, written) => answers.completed(signalId, written),
    ready: () => channel.ready(),
    close: async () => {
      catchUp.close();
      await channel.close();
      await writer?.disconnect();
    },
  };
}
