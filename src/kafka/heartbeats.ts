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
 * is logged and counted as nothing: the next interval tries again.
 */
import type { Kafka, Message, Producer } from 'kafkajs';
import type { KafkaConfig } from '../config/schema.js';
import type { Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { LocationStatus } from '../sync/scheduler.js';
import { ensureCompactedTopic } from './topics.js';

export interface HeartbeatOptions {
  kafka: Kafka;
  topic: string;
  intervalMs: number;
  connectorName: string;
  /** The scheduler's snapshot, read at each beat. */
  locations: () => readonly LocationStatus[];
  metrics: ConnectorMetrics;
  logger: Logger;
  now?: () => number;
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
  private readonly producer: Producer;
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;

  constructor(private readonly options: HeartbeatOptions) {
    if (!(options.intervalMs > 0)) throw new RangeError('heartbeat intervalMs must be positive');
    this.producer = options.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  }

  async start(): Promise<void> {
    await this.producer.connect();
    this.timer = setInterval(() => {
      this.beating ??= this.beat().finally(() => (this.beating = undefined));
    }, this.options.intervalMs);
    this.timer.unref();
  }

  /** Sends one heartbeat per location now. */
  async beat(): Promise<void> {
    const { metrics, connectorName } = this.options;
    const locations = this.options.locations();
    try {
      await this.producer.send({
        topic: this.options.topic,
        acks: -1,
        messages: heartbeatMessages(connectorName, locations, (this.options.now ?? Date.now)()),
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
    clearInterval(this.timer);
    await this.beating;
    await this.producer.disconnect();
  }
}
