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
import { backoffDelayMs, type Backoff } from '../../time/backoff.js';
import { startTimer, type Clock, type Timer } from '../../time/clock.js';
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
  target: LocationSignalTarget | null;
  /** See SignalAnswersOptions.pauses and pausedChanged. */
  pauses?: boolean;
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
 * checks (or creates) the topic, connects the writer, reads the topic to its end and answers what waits; an
 * attempt that fails (a missing ACL, a broker away, a topic with the wrong partition count) is logged with the
 * Kafka error, reported in `health()` and `status().problem`, undone and tried again after a backoff, until one
 * succeeds or `close()`. A topic missing with `kafka.createTopics: false` turns signals off (logged with what to
 * create): nothing is tried again, as before signals existed.
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
    ...(options.pauses !== undefined && { pauses: options.pauses }),
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
  let reader: SignalTopicReader | null = null;

  let closed = false;
  let failure: string | null = null;
  let attempts = 0;
  let retry: Timer | undefined;
  let markReady: () => void = () => undefined;
  const readyPromise = new Promise<void>((resolve) => (markReady = resolve));
  /** Opens what is not open yet; false when signals are off (the topic missing and not to be created). */
  const open = async (): Promise<boolean> => {
    if (writer === null) {
      if (!config.kafka.createTopics && !(await topicExists(kafka, topic))) {
        logger.warn(
          { topic },
          `signals are not taken: topic ${topic} is missing and kafka.createTopics is false ` +
            '(create it compacted, with the offsets topic’s partition count, and restart)',
        );
        return false;
      }
      const partitionCount = await ensureSignalTopic(kafka, config.kafka);
      if (closed) return false;
      const connected = await SignalTopicWriter.connect(kafka, {
        topic,
        connectorName: config.connector.name,
        partitionCount,
      });
      if (closed) {
        await connected.disconnect();
        return false;
      }
      writer = connected;
    }
    reader = newReader();
    await reader.start();
    return true;
  };
  const begin = async (): Promise<void> => {
    try {
      if (!(await open()) || closed) return;
      failure = null;
      await answers.caughtUp();
      markReady();
    } catch (error) {
      if (closed) return;
      attempts += 1;
      const waitMs = backoffDelayMs(options.retryBackoff ?? RETRY_BACKOFF, attempts, clock.random());
      failure = `the signals topic could not be read: ${describeKafkaError(error)}; again in ${Math.ceil(waitMs / 1000)} s`;
      logger.warn({ err: error, topic, retryInMs: waitMs }, 'signals topic not read: signals wait');
      await reader?.stop().catch(() => undefined);
      reader = null;
      retry = startTimer(clock, waitMs, () => void begin(), { unref: true });
    }
  };
  void begin();

  return {
    paused: answers,
    ownershipChanged: () => answers.answerPending(),
    health: () => {
      if (failure !== null) return { ok: false, detail: `SIGNALS_NOT_READ: ${failure}` };
      return reader?.health() ?? { ok: true };
    },
    status: () => ({
      ...answers.status(),
      ...(failure !== null && { problem: `SIGNALS_NOT_READ: ${failure}` }),
    }),
    isOpen: (signalId) => answers.isOpen(signalId),
    completed: (signalId, written) => answers.completed(signalId, written),
    ready: () => readyPromise,
    close: async () => {
      closed = true;
      retry?.cancel();
      await reader?.stop();
      await writer?.disconnect();
    },
  };
}
