/**
 * The signals of a running instance, put together: the signals topic checked (created under
 * `kafka.createTopics`), a writer of outcomes, the reader of the topic and the answerer it feeds
 * (signal-answers.ts). The one call the runtime makes to take signals.
 *
 * Start-up is not held up: `openSignals` resolves once the topic is there and the writer connected; the reader's
 * first read (which costs a consumer-group join, about 3 s) runs in the background, and answering begins when it
 * is complete. A first read that fails is logged and tried again after a backoff; `health()` says why meanwhile.
 * A missing topic with `kafka.createTopics: false` is not fatal: signals are then not taken (logged with what to
 * create), as before signals existed.
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
  metrics: Pick<ConnectorMetrics, 'signalOutcomes' | 'pausedLocations'>;
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
  /** Resolves once the first read is complete and its signals answered (tests; the runtime need not wait). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

const RETRY_BACKOFF: Backoff = { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0.5 };

/** Null when the topic is missing and may not be created (logged): the instance then takes no signal. */
export async function openSignals(kafka: KafkaClient, options: SignalsOptions): Promise<Signals | null> {
  const { config, logger, clock } = options;
  const topic = signalsTopicName(config.kafka.offsetsTopic);
  if (!config.kafka.createTopics && !(await topicExists(kafka, topic))) {
    logger.warn(
      { topic },
      `signals are not taken: topic ${topic} is missing and kafka.createTopics is false ` +
        '(create it compacted, with the offsets topic’s partition count, and restart)',
    );
    return null;
  }
  const partitionCount = await ensureSignalTopic(kafka, config.kafka);
  const writer = await SignalTopicWriter.connect(kafka, {
    topic,
    connectorName: config.connector.name,
    partitionCount,
  });
  const answers = new SignalAnswers({
    instance: options.instance,
    partitionOf: (uid) => writer.partitionOf(uid),
    ownsPartition: options.ownsPartition,
    configured: options.configured,
    write: (partition, outcome) => writer.answerAt(partition, outcome),
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
  let reader = newReader();

  let closed = false;
  let failure: string | null = null;
  let attempts = 0;
  let retry: Timer | undefined;
  let markReady: () => void = () => undefined;
  const readyPromise = new Promise<void>((resolve) => (markReady = resolve));
  const begin = async (): Promise<void> => {
    try {
      await reader.start();
      failure = null;
      await answers.caughtUp();
      markReady();
    } catch (error) {
      if (closed) return;
      attempts += 1;
      const waitMs = backoffDelayMs(options.retryBackoff ?? RETRY_BACKOFF, attempts, clock.random());
      failure = `the signals topic could not be read: ${describeKafkaError(error)}; again in ${Math.ceil(waitMs / 1000)} s`;
      logger.warn({ err: error, topic, retryInMs: waitMs }, 'signals topic not read: signals wait');
      await reader.stop().catch(() => undefined);
      retry = startTimer(
        clock,
        waitMs,
        () => {
          reader = newReader();
          void begin();
        },
        { unref: true },
      );
    }
  };
  void begin();

  return {
    paused: answers,
    ownershipChanged: () => answers.answerPending(),
    health: () => {
      const readerHealth = reader.health();
      if (failure !== null) return { ok: false, detail: `SIGNALS_NOT_READ: ${failure}` };
      return readerHealth;
    },
    status: () => answers.status(),
    ready: () => readyPromise,
    close: async () => {
      closed = true;
      retry?.cancel();
      await reader.stop();
      await writer.disconnect();
    },
  };
}
