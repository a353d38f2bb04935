/**
 * Heartbeat records (`kafka.heartbeatIntervalMs` > 0), as Debezium's heartbeats: so downstream can tell a quiet
 * location (heartbeats keep coming, `lastSuccessAt` keeps moving, no calls) from a stalled one (heartbeats
 * stop, or `lastSuccessAt` stops moving).
 *
 * One record per location every interval to `kafka.heartbeatTopic` (compacted, single partition: the latest
 * heartbeat of each location is kept), key `<connector.name>/<locationUid>`, value JSON
 * `{"connector","location","at","state","lastSuccessAt","since","watermark"}`. Sent with their own idempotent
 * producer, outside the pages' transactions: a heartbeat says the process is alive, not that a page committed.
 *
 * Contract: `start()` once after the topic exists (`ensureHeartbeatTopic`), `stop()` at shutdown. A failed send
 * is logged and counted as nothing: the next interval tries again. The beats are timed on the injected clock
 * (a wait that does not keep the process alive); a beat still sending when the next one is due skips that one.
 */
import type { Kafka, Message, Producer, ProducerConfig } from 'kafkajs';
import type { KafkaConfig } from '../../config/schema.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { LocationStatus } from '../../sync/scheduler/scheduled-location.js';
import { ensureCompactedTopic } from '../topics/topics.js';
import { systemClock, type Clock } from '../../time/clock.js';
/** Heartbeats sent, per location. */
export type HeartbeatMetrics = Pick<ConnectorMetrics, 'heartbeats' | 'location'>;

/** The part of a kafkajs producer heartbeats use; kafkajs' Producer satisfies it. */
export type HeartbeatProducer = Pick<Producer, 'connect' | 'disconnect' | 'send'>;

export interface HeartbeatOptions {
  /** Builds the producer: a kafkajs `Kafka` client (a seam for unit tests). */
  kafka: { producer(config: ProducerConfig): HeartbeatProducer };
  topic: string;
  intervalMs: number;
  connectorName: string;
  /** The scheduler's snapshot, read at each beat. */
  locations: () => readonly LocationStatus[];
  metrics: HeartbeatMetrics;
  logger: Logger;
  clock?: Clock;
}

/** The heartbeat messages of one beat: one per location. Pure. */
export function heartbeatMessages(
  connectorName: string,
  locations: readonly LocationStatus[],
  at: number,
): Message[] {
  return locations.map((location) => ({
    key: `${connectorName}/${location.locationUid}`,
    value: JSON.stringify({
      connector: connectorName,
      location: location.locationUid,
      at: new Date(at).toISOString(),
      state: location.state,
      lastSuccessAt: location.lastSuccessAt === null ? null : new Date(location.lastSuccessAt).toISOString(),
      since: location.offset.since,
      watermark: location.offset.watermark,
    }),
  }));
}

export async function ensureHeartbeatTopic(kafka: Kafka, config: KafkaConfig): Promise<void> {
  await ensureCompactedTopic(kafka, config.heartbeatTopic, {
    replicationFactor: config.replicationFactor,
    create: config.createTopics,
    configKey: 'kafka.heartbeatTopic',
  });
}

export class HeartbeatPublisher {
  private readonly producer: HeartbeatProducer;
  private readonly clock: Clock;
  private readonly stopping = new AbortController();
  private beating: Promise<void> | undefined;

  constructor(private readonly options: HeartbeatOptions) {
    if (!(options.intervalMs > 0)) throw new RangeError('heartbeat intervalMs must be positive');
    this.producer = options.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    this.clock = options.clock ?? systemClock;
  }

  async start(): Promise<void> {
    await this.producer.connect();
    this.beating = this.beatEveryInterval();
  }

  /** Beats every intervalMs from now until stop(); a beat that overruns its interval skips the next. */
  private async beatEveryInterval(): Promise<void> {
    const { intervalMs } = this.options;
    const signal = this.stopping.signal;
    let due = this.clock.now() + intervalMs;
    for (;;) {
      try {
        await this.clock.sleep(Math.max(0, due - this.clock.now()), signal, { unref: true });
      } catch {
        return; // stopped
      }
      await this.beat();
      due += intervalMs;
      while (due <= this.clock.now()) due += intervalMs;
    }
  }

  /** Sends one heartbeat per location now. */
  async beat(): Promise<void> {
    const { metrics, connectorName } = this.options;
    const locations = this.options.locations();
    try {
      await this.producer.send({
        topic: this.options.topic,
        acks: -1,
        messages: heartbeatMessages(connectorName, locations, this.clock.now()),
      });
      for (const location of locations)
        metrics.heartbeats.inc({ location: metrics.location(location.locationUid) });
    } catch (error) {
      this.options.logger.warn(
        { err: error, topic: this.options.topic },
        'heartbeat not sent; next interval tries again',
      );
    }
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.beating;
    await this.producer.disconnect();
  }
}
