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
 * change of what this instance owns (a rebalance, a takeover) so that signals waiting for an owner are answered.
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
import { SignalAnswers, type SignalsStatus } from './signal-answers.js';
import type { LocationSignalTarget, PausedLocations } from './signal-ports.js';

export interface SignalsOptions {
  config: Pick<ConnectorConfig, 'connector' | 'kafka'>;
  /** This instance, as outcomes name it. */
  instance: string;
  /** Whether this instance owns (and writes for) the offsets partition now. */
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
  const answers = new SignalAnswers({
    instance: options.instance,
    // -1 is no partition anyone owns: nothing is answered before a writer is connected.
    partitionOf: (uid) => writer?.partitionOf(uid) ?? -1,
    ownsPartition: options.ownsPartition,
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
      each: (entry, at) => answers.onEntry(entry, at),
      logger,
      clock,
    });
  /** The reader of the attempt that opened the channel; null before. */
  let reader: SignalTopicReader | null = null;

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
    backoff: options.retryBackoff ?? RETRY_BACKOFF,
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
    ownershipChanged: () => answers.answerPending(),
    health: () => {
      const why = problem();
      return why === null ? { ok: true } : { ok: false, detail: why };
    },
    status: () => {
      const why = problem();
      return { ...answers.status(), ...(why !== null && { problem: why }) };
    },
    isOpen: (signalId) => answers.isOpen(signalId),
    completed: (signalId, written) => answers.completed(signalId, written),
    ready: () => channel.ready(),
    close: async () => {
      await channel.close();
      await writer?.disconnect();
    },
  };
}
